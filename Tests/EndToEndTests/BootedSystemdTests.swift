import Foundation
import Testing

/// The package in a booted systemd (systemd-nspawn: the host's own root, read-only under a
/// tmpfs overlay), used as an administrator would: `scripts/booted-test` says each step (among
/// them a hot folder under /home made by `init` that `check` finds OK, and the web console
/// enabled with one `systemctl enable --now` while the service runs). About 60 s; skipped, with the reason, where it cannot boot (not root, no systemd-nspawn, no
/// overlayfs) or there is no package (`scripts/package --quick` builds it).
struct BootedSystemdTests {
    @Test func thePackageInABootedSystemdAsAnAdministratorUsesIt() throws {
        guard !PackageTests.skip("the package in a booted systemd"), let deb = PackageTests.package else { return }
        let script = CommandLineTests.repository + "/scripts/booted-test"
        let photo = try Harness.tempDir() + "/square.jpg"
        try Harness.write(try HotFolderFixture.photo(1, width: 400), to: photo)
        let r = try Harness.exec("/bin/bash", [script, "--photo", photo, deb], deadline: .seconds(900))
        if r.status == 77 {
            print(r.stdout.split(separator: "\n").last.map(String.init) ?? "skipped: scripts/booted-test skipped")
            return
        }
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("ok: every INBOX=studio MESSAGE leads with studio"), "\(r.stdout)")
        #expect(r.stdout.contains("ok: the photo is finished"), "\(r.stdout)")
        #expect(r.stdout.contains("ok: check says OK for the /home folder made by init"), "\(r.stdout)")
        #expect(r.stdout.contains("ok: enable --now photofinish-web.socket succeeds while the service runs"), "\(r.stdout)")
        #expect(r.stdout.contains("ok: the console answers on port 8732"), "\(r.stdout)")
        #expect(r.stdout.contains("ok: purge removes the logins"), "\(r.stdout)")
    }
}
