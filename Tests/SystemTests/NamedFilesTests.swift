import Foundation
import Glibc
import System
import Testing

/// Files a person names by path (`Files` in NamedFiles.swift): what the config, the templates,
/// the service's own files and the command line read and write through `System`.
struct NamedFilesTests {
    func folder() throws -> FilePath {
        let path = FilePath(TemporaryFolder.path("named"))
        try Files.makeDirectory(path)
        return path
    }

    @Test func aFileIsWrittenReadAsBytesAndAsTextAndALinkIsFollowed() throws {
        let root = try folder()
        defer { try? Files.removeTree(root) }
        let file = root.appending("a.json5")
        try Files.write(Array("{ a: 1 }".utf8), to: file)
        #expect(try Files.contents(of: file) == Array("{ a: 1 }".utf8))
        #expect(try Files.contents(of: file, limit: 3) == Array("{ a".utf8))
        #expect(try Files.text(of: file) == "{ a: 1 }")
        // Written again shorter: truncated, not overwritten in place.
        try Files.write(Array("b".utf8), to: file)
        #expect(try Files.text(of: file) == "b")
        // Made 0666 less the umask, as Foundation made them.
        let mask = umask(0); umask(mask)
        #expect(try Files.status(file)?.permissions == 0o666 & ~UInt32(mask))

        let link = root.appending("link")
        _ = link.withCString { l in file.withCString { symlink($0, l) } }
        #expect(try Files.text(of: link) == "b")
        #expect(Files.existsFollowingLinks(link))
        #expect(try Files.statusFollowingLinks(link)?.isRegular == true)
        #expect(try Files.status(link)?.kind == .symbolicLink)
    }

    @Test func nothingThereIsNilAndADanglingLinkIsNothing() throws {
        let root = try folder()
        defer { try? Files.removeTree(root) }
        let missing = root.appending("missing")
        #expect(try Files.contents(of: missing) == nil)
        #expect(try Files.text(of: missing) == nil)
        #expect(try Files.statusFollowingLinks(missing) == nil)
        let dangling = root.appending("dangling")
        _ = dangling.withCString { l in missing.withCString { symlink($0, l) } }
        #expect(!Files.existsFollowingLinks(dangling))
        #expect(Files.exists(dangling))
    }

    @Test func bytesThatAreNotUTF8AreNoText() throws {
        let root = try folder()
        defer { try? Files.removeTree(root) }
        let file = root.appending("latin1.txt")
        try Files.write([0x63, 0x61, 0x66, 0xE9], to: file)
        #expect(try Files.contents(of: file) == [0x63, 0x61, 0x66, 0xE9])
        #expect(try Files.text(of: file) == nil)
    }

    @Test func textNamesLeaveOutNamesThatAreNotUTF8() throws {
        let root = try folder()
        defer { try? Files.removeTree(root) }
        try Files.write([], to: root.appending("b.conf"))
        try Files.write([], to: root.appending("a.conf"))
        try Files.write([], to: root.appending(FileName(bytes: [0x63, 0xE9])!))
        #expect(Files.textNames(in: root).sorted() == ["a.conf", "b.conf"])
        #expect(try Files.names(in: root).count == 3)
        #expect(Files.textNames(in: root.appending("missing")).isEmpty)
    }

    @Test func readableAndExecutableAreTheRealUsersRights() throws {
        let root = try folder()
        defer { try? Files.removeTree(root) }
        let script = root.appending("hook")
        try Files.write(Array("#!/bin/sh\n".utf8), to: script)
        try Files.setPermissions(script, 0o644)
        #expect(Files.isReadable(script))
        #expect(!Files.isExecutable(script))
        try Files.setPermissions(script, 0o755)
        #expect(Files.isExecutable(script))
        #expect(!Files.isExecutable(root.appending("missing")))
    }

    @Test func aRelativePathIsMadeAbsoluteFromTheCurrentFolder() throws {
        let here = try Files.currentDirectory()
        #expect(Files.absolute("/etc/x.json5") == "/etc/x.json5")
        #expect(Files.absolute(FilePath("a/../b")) == FilePath(bytes: here.bytes + Array("/a/../b".utf8)))
        #expect(Files.absolute("t.json5") == String(decoding: here.bytes, as: UTF8.self) + "/t.json5")
    }

    @Test func foldersAreMadeWithTheirParents() throws {
        let root = try folder()
        defer { try? Files.removeTree(root) }
        let deep = root.appending("a/b/c")
        try Files.makeDirectories(deep, permissions: 0o777)
        #expect(Files.isDirectory(deep))
        try Files.makeDirectories(deep)  // there already: fine
    }
}
