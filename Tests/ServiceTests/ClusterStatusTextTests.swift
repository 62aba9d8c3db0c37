import Batches
@testable import Cluster
import Foundation
import Testing
@testable import Service

/// This daemon as a host of a cluster where people look: STATUS.txt's lines, the `STATUS=`
/// line, the metrics' `host` label and gauges (the daemons themselves: ClusterDaemonTests).
struct ClusterStatusTextTests {
    static func host(_ database: String, up: Int = 0) -> ServiceStatus.ClusterState {
        var state = ServiceStatus.ClusterState(host: "studio-2", database: database, since: "2026-11-29T15:04:05.123Z", lease: 30)
        state.reason = database == ServiceStatus.ClusterState.unreachable ? "connection to server on socket \"/run/postgresql/.s.PGSQL.5432\" failed" : nil
        if up > 0 {
            let hosts = (0..<up).map {
                ClusterStatus.Host(name: "h\($0)", pid: 1, version: "0.9.0", workers: 2, inboxes: ["shop"], seenAgo: 1,
                                   started: 0, stopped: false, tasks: [])
            }
            state.view = ClusterStatus(server: "PostgreSQL 15", schema: 1, schemaKnown: 1, history: [], hosts: hosts, batches: [])
        }
        return state
    }

    @Test func statusTextSaysWhichHostAndWhetherTheDatabaseAnswers() {
        let shop = ServiceStatus.Inbox(name: "shop", root: "/srv/shop")
        let updated = Date(timeIntervalSince1970: 1_796_000_000)
        let up = StatusText.render(shop, running: true, updated: updated, cluster: Self.host("reachable", up: 3))
        #expect(up.contains("\r\n\r\nThis is host \"studio-2\" of a cluster of 3 hosts up: photos are finished by whichever host is free.\r\n\r\nIdle"), "\(up)")
        let down = StatusText.render(shop, running: true, updated: updated, cluster: Self.host("unreachable"))
        #expect(down.contains("The cluster's database does not answer (since \(HumanTime.words(isoUTC: "2026-11-29T15:04:05.123Z"))): connection to server on socket \"/run/postgresql/.s.PGSQL.5432\" failed.\r\n"))
        #expect(down.contains("This host (\"studio-2\") works alone meanwhile, as without a cluster: it claims and finishes photos itself, and spreads them again once the database answers."))
        #expect(down.unicodeScalars.allSatisfy { $0.isASCII })
        #expect(StatusText.render(shop, running: true, updated: updated, cluster: Self.host("connecting"))
            .contains("This is host \"studio-2\" of a cluster: its database has not answered yet."))
        // Which host claims from the folder (its claimer role), while running.
        var claimed = shop
        claimed.claimer = "studio-1"
        #expect(StatusText.render(claimed, running: true, updated: updated, cluster: Self.host("reachable", up: 3))
            .contains("New photos are claimed by host \"studio-1\" (one host of the cluster claims at a time).\r\n"))
        #expect(!StatusText.render(claimed, running: false, updated: updated).contains("claimed by host"))
        // Alone, or stopped: nothing of a cluster.
        #expect(!StatusText.render(shop, running: true, updated: updated).contains("cluster"))
        #expect(!StatusText.render(shop, running: false, updated: updated, cluster: Self.host("reachable")).contains("cluster"))
        // A new reading of the cluster that changes nothing it says rewrites no STATUS.txt.
        var later = Self.host("reachable", up: 3)
        later.read = "2026-11-29T15:05:00.000Z"
        #expect(StatusText.clusterLines(later) == StatusText.clusterLines(Self.host("reachable", up: 3)))
        #expect(StatusText.clusterLines(Self.host("reachable", up: 2)) != StatusText.clusterLines(Self.host("reachable", up: 3)))
    }

    @Test func theStatusLineLeadsWithAnUnreachableDatabase() {
        var status = ServiceStatus(pid: 1, updated: "", state: .running, inboxes: [ServiceStatus.Inbox(name: "shop", root: "/srv/shop")])
        #expect(status.summary == "shop: idle")
        status.cluster = Self.host("unreachable")
        #expect(status.summary == "cluster database unreachable · shop: idle")
        status.cluster = Self.host("reachable")
        #expect(status.summary == "shop: idle")
    }

    @Test func inAClusterEverySeriesHasItsHostAndTheDatabaseHasAGauge() {
        let metrics = Metrics()
        metrics.setInboxes(["shop"])
        let alone = metrics.text()
        #expect(!alone.contains("host=") && !alone.contains("photofinish_cluster_"))
        let before = metrics.version
        metrics.setCluster(host: "studio-2", databaseUp: false, held: 2)
        #expect(metrics.version > before)
        let text = metrics.text()
        #expect(text.contains("photofinish_photos_total{host=\"studio-2\",inbox=\"shop\",status=\"ok\"} 0\n"))
        #expect(text.contains("photofinish_photos_in_flight{host=\"studio-2\"} 0\n"))
        #expect(text.contains("photofinish_photo_duration_seconds_bucket{host=\"studio-2\",inbox=\"shop\",le=\"+Inf\"} 0\n"))
        #expect(text.contains("# TYPE photofinish_cluster_database_up gauge\nphotofinish_cluster_database_up{host=\"studio-2\"} 0\n"))
        #expect(text.contains("photofinish_cluster_tasks_held{host=\"studio-2\"} 2\n"))
        let same = metrics.version
        metrics.setCluster(host: "studio-2", databaseUp: false, held: 2)
        #expect(metrics.version == same, "an unchanged cluster rewrites no metrics file")
        // Every sample line has a host label.
        let samples = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(samples.allSatisfy { $0.contains("{host=\"studio-2\"") })
    }
}
