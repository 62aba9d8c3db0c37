import Batches

/// `photofinish report PATH`: a report in words.
enum ReportCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard a.positional.count == 1 else { throw UsageError("report needs one PATH (a batch folder or its report.json)") }
        do {
            print(ReportText.render(try ReportText.load(a.positional[0])), terminator: "")
            return 0
        } catch {
            Terminal.error("\(error)")
            return 2
        }
    }
}
