import Foundation
import System
import Testing

/// The calls on real folders: names that are not UTF-8, the claim primitive in each of its
/// methods, atomic writes, the file system's type.
struct FileSystemTests {
    func folder() throws -> (FilePath, Directory) {
        let path = FilePath(TemporaryFolder.path("system"))
        try Files.makeDirectory(path)
        return (path, try Directory(path))
    }

    func write(_ text: String, _ name: FileName, in dir: Directory) throws {
        try dir.open(name, .write, [.create, .exclusive]).write(Array(text.utf8))
    }

    func read(_ name: FileName, in dir: Directory) throws -> String {
        String(decoding: try dir.open(name, .read).readAll(), as: UTF8.self)
    }

    @Test func aNameThatIsNotUTF8IsListedOpenedAndRemovedByItsBytes() throws {
        let (path, dir) = try folder()
        let name = FileName(bytes: [0x63, 0x61, 0x66, 0xE9, 0x2E, 0x6A, 0x70, 0x67])!
        try write("latin-1", name, in: dir)
        #expect(try dir.names() == [name])
        #expect(try read(name, in: dir) == "latin-1")
        #expect(try dir.status(of: name)?.size == 7)
        #expect(Files.exists(path.appending(name)))
        try dir.remove(name)
        #expect(try dir.names().isEmpty)
        try Files.removeTree(path)
        #expect(!Files.exists(path))
    }

    @Test func aLocalDiskTakesRenameFlags() throws {
        let (path, dir) = try folder()
        let mover = try Mover.probe(in: dir)
        let type = try dir.fileSystem()
        if type.isShared {
            print("skipped: the temporary folder is on \(type), not a local disk")
        } else {
            #expect(mover.method == .renameNoReplace, "\(type)")
        }
        #expect(try dir.names().isEmpty, "the probe leaves nothing behind")
        try Files.removeTree(path)
    }

    @Test(arguments: [Mover.Method.renameNoReplace, .renameAndLink, .renameChecked])
    func eachMethodMovesWithoutReplacing(_ method: Mover.Method) throws {
        let (path, dir) = try folder()
        let mover = Mover(method)
        let shared = try { () throws -> Directory in try dir.makeFolder("drop"); return try dir.folder("drop") }()
        let own = try { () throws -> Directory in try dir.makeFolder("own"); return try dir.folder("own") }()
        try write("a", "a.jpg", in: shared)
        // Take: into a folder only we write; gone once taken.
        #expect(try mover.take("a.jpg", from: shared, into: own))
        #expect(try !mover.take("a.jpg", from: shared, into: own))
        #expect(try read("a.jpg", in: own) == "a")
        // Move back to the shared folder, where someone dropped the same name meanwhile.
        try write("new", "a.jpg", in: shared)
        #expect(throws: SystemError.self) { try mover.move("a.jpg", from: own, to: shared) }
        #expect(try read("a.jpg", in: shared) == "new")
        #expect(try mover.move("a.jpg", from: own, to: shared, as: "a-recovered-1.jpg"))
        #expect(try read("a-recovered-1.jpg", in: shared) == "a")
        #expect(try own.names().isEmpty)
        #expect(try !mover.move("gone.jpg", from: own, to: shared))
        try Files.removeTree(path)
    }

    @Test func aMoveALinkLeftHalfDoneIsFinished() throws {
        // A crash between link() and unlink(): the file has both names; moving again finishes.
        let (path, dir) = try folder()
        try dir.makeFolder("a")
        try dir.makeFolder("b")
        let a = try dir.folder("a"), b = try dir.folder("b")
        try write("x", "x.jpg", in: a)
        #expect(link(path.appending("a/x.jpg").description, path.appending("b/x.jpg").description) == 0)
        #expect(try Mover(.renameAndLink).move("x.jpg", from: a, to: b))
        #expect(try a.names().isEmpty)
        #expect(try b.status(of: "x.jpg")?.links == 1)
        try Files.removeTree(path)
    }

    @Test func anAtomicWriteReplacesWholeAndLeavesNoTemporaryFile() throws {
        let (path, dir) = try folder()
        let target = path.appending("report.json")
        try AtomicFile.write(Array("first".utf8), to: target)
        try AtomicFile.write(Array("second".utf8), to: target)
        #expect(try Files.read(target) == Array("second".utf8))
        #expect(try dir.names() == ["report.json"])
        // A folder that is gone: a clear error naming the path.
        let error = #expect(throws: SystemError.self) {
            try AtomicFile.write(Array("x".utf8), to: path.appending("missing/report.json"))
        }
        #expect(error?.code == ENOENT)
        #expect(error?.description.contains("missing") == true)
        try Files.removeTree(path)
    }

    @Test func anAtomicWriteOfItsContentsOnlyReplacesWholeAndLeavesNoTemporaryFile() throws {
        let (path, dir) = try folder()
        let target = path.appending("a.jpg")
        try AtomicFile.write(Array("first".utf8), to: target, .contents)
        try AtomicFile.write(Array("second, longer".utf8), to: target, .contents)
        #expect(try Files.read(target) == Array("second, longer".utf8))
        #expect(try dir.names() == ["a.jpg"])
        let error = #expect(throws: SystemError.self) {
            try AtomicFile.write(Array("x".utf8), to: path.appending("missing/a.jpg"), .contents)
        }
        #expect(error?.code == ENOENT)
        try Files.removeTree(path)
    }

    @Test func fileSystemTypesAreNamedAndNetworkOnesAreShared() {
        #expect(FileSystemType(magic: 0x6969).name == "nfs" && FileSystemType(magic: 0x6969).isShared)
        #expect(FileSystemType(magic: 0xFE53_4D42).name == "smb2" && FileSystemType(magic: 0xFE53_4D42).isShared)
        #expect(FileSystemType(magic: 0xFF53_4D42).isShared && FileSystemType(magic: 0x6573_5546).isShared)
        #expect(FileSystemType(magic: 0x0102_1997).isShared && FileSystemType(magic: 0x00C3_6400).isShared)
        #expect(FileSystemType(magic: 0xEF53).name == "ext4" && !FileSystemType(magic: 0xEF53).isShared)
        #expect(FileSystemType(magic: 0x1234).name == "0x1234")
    }
}
