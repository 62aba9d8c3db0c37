import Configuration
import Foundation
import HotFolders
import Glibc
@testable import Service
import Testing

/// What the installed unit says, and whose rights a hot folder is checked against: plain
/// values (the end-to-end tests run the checks on real folders as another user).
struct HotFolderCheckTests {
    @Test func theUnitIsReadAsSystemdMergesItsDropIns() {
        let unit = ServiceUnit.parse([
            """
            [Unit]
            Description=x
            [Service]
            User=photofinish
            ExecStart=/usr/bin/photofinish daemon --config /etc/pf/pf.json5
            ReadWritePaths=/srv/photofinish
            StateDirectory=photofinish
            ProtectSystem=strict
            ProtectHome=yes
            PrivateTmp=yes
            # ReadWritePaths=/commented
            """,
            "[Service]\nReadWritePaths=-/data/one \\\n  /data/two\n",
            "[Service]\nReadWritePaths=\nReadWritePaths=+/data/three\nUser=pf2\n[Install]\nReadWritePaths=/not/a/service/key\n",
        ])
        #expect(unit.user == "pf2")
        #expect(unit.config == "/etc/pf/pf.json5")
        #expect(unit.readWritePaths == ["/data/three"])
        #expect(unit.ownDirectories == ["/var/lib/photofinish"])
        #expect(unit.protectSystem == "strict" && unit.protectHome == "yes" && unit.privateTmp)
    }

    @Test func whereTheServiceMayWrite() {
        var unit = ServiceUnit()
        unit.protectSystem = "strict"
        unit.readWritePaths = ["/srv/photofinish"]
        unit.ownDirectories = ["/var/lib/photofinish"]
        #expect(unit.mayWrite("/srv/photofinish/shop"))
        #expect(unit.mayWrite("/srv/photofinish"))
        #expect(!unit.mayWrite("/srv/photofinish-old/shop"))
        #expect(!unit.mayWrite("/data/shop"))
        #expect(unit.mayWrite("/var/lib/photofinish/x"))
        unit.protectSystem = "no"
        #expect(unit.mayWrite("/data/shop"))

        unit.protectSystem = "strict"
        unit.protectHome = "yes"
        let home = HotFolderCheck.placeProblem("/home/alice/shop", unit: unit)
        #expect(home?.why == "/home/alice/shop is in /home, which the unit hides from the service (ProtectHome=yes)")
        let outside = HotFolderCheck.placeProblem("/data/shop", unit: unit)
        #expect(outside?.why == "/data/shop lies outside the unit's ReadWritePaths (/srv/photofinish): the service may not write there")
        #expect(outside?.fix == ["sudo systemctl edit photofinish     and add:", "    [Service]", "    ReadWritePaths=/data/shop",
                                 "sudo systemctl restart photofinish   (a drop-in applies at a restart, not a reload)"])
        #expect(HotFolderCheck.placeProblem("/srv/photofinish/shop", unit: unit) == nil)
    }

    /// A hot folder under /home, as `photofinish init` has it served (ProtectHome=tmpfs and
    /// BindPaths= of the folder): the check by hand agrees it is the service's, even though the
    /// home folder above it (0700, its owner's) is not the service's to pass through — inside
    /// the service, the folders above a bound one are systemd's.
    @Test func aHomeFolderBoundIntoTheServiceIsItsToWrite() throws {
        let unit = ServiceUnit.parse([
            "[Service]\nUser=photofinish\nProtectSystem=strict\nProtectHome=yes\nReadWritePaths=/srv/photofinish\n",
            "[Service]\nProtectHome=tmpfs\nBindPaths=/home/alice/photos\nBindPaths=-/data/in:/srv/in:rbind\n",
        ])
        #expect(unit.protectHome == "tmpfs" && unit.bindPaths == ["/home/alice/photos", "/srv/in"])
        #expect(ServiceUnit.bindDestinations("/home/alice/photos:/home/alice/photos:rbind /a") == ["/home/alice/photos", "/a"])
        #expect(HotFolderCheck.placeProblem("/home/alice/photos", unit: unit) == nil)
        #expect(HotFolderCheck.placeProblem("/home/alice/other", unit: unit)?.why.contains("ProtectHome") == true)
        #expect(unit.mayWrite("/home/alice/photos/drop") && !unit.mayWrite("/home/alice"))

        // On disk: a "home" folder of 0700 and, in it, the hot folder, the service user's own.
        guard getuid() == 0 else {
            print("skipped: not root, the folders cannot be given to another user")
            return
        }
        let home = NSTemporaryDirectory() + "pf-home-\(UInt32.random(in: 0...UInt32.max))"
        let root = home + "/photos"
        try HotFolderLayout(root: root).create()
        defer { try? FileManager.default.removeItem(atPath: home) }
        #expect(chmod(home, 0o700) == 0)
        for path in [root] + HotFolderCheck.folders.map({ root + "/" + $0 }) { #expect(chown(path, 990, 990) == 0) }
        var who = HotFolderCheck.Subject(user: "pf", uid: 990, gid: 990, groupName: "pf", groups: [990],
                                         isThisProcess: false, insideUnit: false, unit: nil)
        var bound = ServiceUnit()
        bound.bindPaths = [ServiceUnit.resolved(root)]
        who.unit = bound
        let found = HotFolderCheck.problems(name: "photos", root: root, for: who)
        #expect(found.isEmpty, "\(found)")
        // Not bound: the home folder's 0700 keeps the service out, as the check says.
        who.unit = ServiceUnit()
        #expect(HotFolderCheck.problems(name: "photos", root: root, for: who).first?.why.contains("cannot write") == true)
    }

    @Test func thePermissionBitsAnswerForAnotherUser() {
        let who = HotFolderCheck.Subject(user: "pf", uid: 990, gid: 990, groupName: "pf", groups: [990, 44],
                                         isThisProcess: false, insideUnit: false, unit: nil)
        func folder(uid: uid_t, gid: gid_t, mode: mode_t) -> stat {
            var st = stat()
            st.st_uid = uid
            st.st_gid = gid
            st.st_mode = S_IFDIR | mode
            return st
        }
        #expect(HotFolderCheck.allows(folder(uid: 990, gid: 0, mode: 0o755), who, write: true))
        #expect(!HotFolderCheck.allows(folder(uid: 0, gid: 0, mode: 0o755), who, write: true))
        #expect(HotFolderCheck.allows(folder(uid: 0, gid: 0, mode: 0o755), who, write: false))
        #expect(HotFolderCheck.allows(folder(uid: 0, gid: 44, mode: 0o2775), who, write: true))
        // The owner's bits decide for the owner, even when the others' would allow more.
        #expect(!HotFolderCheck.allows(folder(uid: 990, gid: 0, mode: 0o577), who, write: true))
        #expect(!HotFolderCheck.allows(folder(uid: 0, gid: 0, mode: 0o700), who, write: false))
        let root = HotFolderCheck.Subject(user: "root", uid: 0, gid: 0, groupName: "root", groups: [0],
                                          isThisProcess: false, insideUnit: false, unit: nil)
        #expect(HotFolderCheck.allows(folder(uid: 5, gid: 5, mode: 0o700), root, write: true))
    }

    @Test func aProblemPrintsItsFixUnderIt() {
        let p = HotFolderCheck.Problem(inbox: "shop", root: "/srv/x", why: "the user pf cannot write /srv/x",
                                       fix: ["sudo chown -R pf:pf /srv/x", "then reload"])
        #expect(p.description == "shop: the user pf cannot write /srv/x\n  fix: sudo chown -R pf:pf /srv/x\n       then reload")
        #expect(HotFolderCheck.shell("/srv/Studio Nord") == "'/srv/Studio Nord'" && HotFolderCheck.shell("/srv/a") == "/srv/a")
    }
}

/// The config's `keep`, as retention takes it.
struct RetentionSettingsTests {
    @Test func foreverIsNilAndDurationsPassThrough() {
        let keep = Retention.Keep(Config.Keep(out: .duration(.seconds(60)), originals: .forever, failed: .duration(.seconds(5))))
        #expect(keep == Retention.Keep(out: .seconds(60), originals: nil, failed: .seconds(5)))
        #expect(Retention.Keep(Config.Keep()).isForever)
    }
}
