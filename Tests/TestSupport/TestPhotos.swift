import Foundation

/// Real photos of people that scripts/test-photos installs from the Debian and PyPI packages that
/// ship them (their licences keep them out of the repository).
public enum TestPhotos {
    /// Where scripts/test-photos puts them (`PF_TEST_PHOTOS` overrides).
    public static let folder = ProcessInfo.processInfo.environment["PF_TEST_PHOTOS"]
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/test-photos").path

    /// The photo's bytes, or nil (and a printed reason) when it is not installed.
    public static func photo(_ name: String) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: folder + "/" + name) else {
            print("skipped: \(folder)/\(name) is missing: run scripts/test-photos")
            return nil
        }
        return [UInt8](data)
    }
}
