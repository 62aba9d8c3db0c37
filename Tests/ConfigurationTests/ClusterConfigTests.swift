import Configuration
import Foundation
import JSON5
import Testing

/// `cluster: { database, host, lease }` (SPEC §9).
@Suite struct ClusterConfigTests {
    @Test func withoutClusterOneHostAsEver() throws {
        let config = try Config.parse(text: "{ inboxes: [] }", file: "pf.json5")
        #expect(config.cluster == nil)
    }

    @Test func theKeysAreRead() throws {
        let config = try Config.parse(text: """
            { inboxes: [], cluster: { database: "host=/run/postgresql dbname=photofinish", host: "studio-2", lease: "45s",
                                 claimerTakeover: "20s" } }
            """, file: "pf.json5")
        #expect(config.cluster == ClusterSettings(database: "host=/run/postgresql dbname=photofinish", host: "studio-2",
                                                  lease: .seconds(45), claimerTakeover: .seconds(20)))
        let plain = try Config.parse(text: #"{ inboxes: [], cluster: { database: "postgresql://pf@db/photofinish" } }"#, file: "pf.json5")
        #expect(plain.cluster?.host == nil, "the service takes the machine's host name")
        #expect(plain.cluster?.lease == .seconds(30))
        #expect(plain.cluster?.claimerTakeover == .seconds(10))
    }

    @Test func badKeysAreNamedByFileLineAndKey() {
        let errors = configTestErrors("""
            {
              inboxes: [],
              cluster: { host: "a b", lease: "1s", port: 5432 },
            }
            """).map(\.description)
        #expect(errors == [
            "pf.json5:3: cluster.port: unknown key 'port' (allowed here: database, host, lease, claimerTakeover)",
            "pf.json5:3: cluster: missing key 'database' (a libpq connection string, like \"host=/run/postgresql dbname=photofinish\")",
        ])
        let more = configTestErrors("""
            {
              inboxes: [],
              cluster: { database: "host=/tmp", host: "-x", lease: "1s", claimerTakeover: "2s" },
            }
            """).map(\.description)
        #expect(more == [
            "pf.json5:3: cluster.host: must be letters, digits, '.', '_' or '-' (at most 63, not starting with '.' or '-'), got \"-x\"",
            "pf.json5:3: cluster.lease: must be from 3s to 10m (renewed every third of it; a dead host's photos wait this long), got 1s",
            "pf.json5:3: cluster.claimerTakeover: must be from 5s to 10m (a dead claimer's role and open batch wait this long for another host), got 2s",
        ])
        #expect(configTestErrors(#"{ inboxes: [], cluster: { database: " " } }"#).map(\.message)
                == ["must not be empty"])
        #expect(configTestErrors(#"{ inboxes: [], cluster: "host=/tmp" }"#).count == 1)
    }
}
