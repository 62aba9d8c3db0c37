/// A codes file (template `metadata.codes`; reference: Metadata templates): short codes written
/// between `=` signs in a metadata text (`=7=`, `=CC11=`) and the texts they stand for, as
/// Photo Mechanic's code replacement files hold them — a roster, a list of venues.
///
/// The file is UTF-8 text (a leading byte order mark is skipped), one code a line: the code, a
/// tab, its text, and more tab-separated texts for other forms of it (a surname, a team). Blank
/// lines and lines starting with `//` are left out; spaces around a cell are trimmed; a cell in
/// double quotes (as spreadsheets export one holding a quote) is unquoted. `=CODE=` stands for
/// the first text, `=CODE#2=` for the second, and so on. Pure: the file's text in, texts out.
public struct CodeReplacements: Sendable, Equatable {
    /// The file as the template names it (relative to the template's folder), for messages.
    public var file: String
    /// The file's text as read: kept with a claimed batch (`Template.codesFiles`).
    public let source: String
    /// Each code's texts, first column first.
    private var texts: [String: [String]]

    /// The number of codes.
    public var count: Int { texts.count }

    /// A problem in the file: its line (1-based) and what is wrong.
    public struct Problem: Error, Sendable, Equatable {
        public var line: Int
        public var message: String
    }

    /// The longest code a text may look up; longer runs between `=` signs are plain text.
    static let maxCode = 64

    /// Reads the file's text.
    /// - Throws: the first `Problem` (a line without a tab, a code given twice, a code with a
    ///   space or `=` in it, a code with no text).
    public init(file: String, text: String) throws(Problem) {
        self.file = file
        source = text
        var texts: [String: [String]] = [:]
        var firstLine: [String: Int] = [:]
        // Read as UTF-8 bytes: every separator is ASCII, so each piece between them is whole
        // characters (and Swift's Character would take a CRLF for one, never equal to "\n").
        var bytes = Array(text.utf8)[...]
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        for (index, content) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            let line = index + 1
            if content.allSatisfy(Self.isSpace) || content.starts(with: [0x2F, 0x2F]) { continue }
            let cells = content.split(separator: 0x09, omittingEmptySubsequences: false).map(Self.cell)
            guard cells.count >= 2 else {
                throw Problem(line: line, message: "no tab after the code: a code and its text are separated by a tab "
                              + "(spaces do not count), e.g. \"7<tab>Ada Lovelace\"")
            }
            let code = cells[0]
            guard !code.isEmpty, code.count <= Self.maxCode,
                  !code.contains(where: { $0 == "=" || $0.isWhitespace }) else {
                throw Problem(line: line, message: "the code \"\(code)\" cannot be written between = signs: a code is 1 to "
                              + "\(Self.maxCode) characters without spaces or =")
            }
            var forms = Array(cells.dropFirst())
            while forms.last?.isEmpty == true { forms.removeLast() }
            guard !forms.isEmpty else { throw Problem(line: line, message: "the code \(code) has no text after its tab") }
            if let first = firstLine[code] {
                throw Problem(line: line, message: "the code \(code) is given twice (first on line \(first)): keep one")
            }
            firstLine[code] = line
            texts[code] = forms
        }
        self.texts = texts
    }

    /// An ASCII space, tab or line end (CR: a CRLF file's lines end in one).
    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    /// A cell as written: spaces around it trimmed, and unquoted when a spreadsheet quoted it
    /// (`"say ""hi"""` → `say "hi"`).
    private static func cell(_ raw: ArraySlice<UInt8>) -> String {
        var cell = raw
        while let first = cell.first, isSpace(first) { cell = cell.dropFirst() }
        while let last = cell.last, isSpace(last) { cell = cell.dropLast() }
        guard cell.count >= 2, cell.first == 0x22, cell.last == 0x22 else { return String(decoding: cell, as: UTF8.self) }
        var unquoted: [UInt8] = []
        var quote = false
        for byte in cell.dropFirst().dropLast() {
            if byte == 0x22 && quote { quote = false; continue }
            quote = byte == 0x22
            unquoted.append(byte)
        }
        return String(decoding: unquoted, as: UTF8.self)
    }

    /// The text `reference` (what stands between the `=` signs: `7`, `7#2`) names, or nil
    /// when the file has no such code or no text in that column.
    public func text(for reference: Substring) -> String? {
        if let forms = texts[String(reference)] { return forms[0] }
        guard let hash = reference.lastIndex(of: "#"), hash != reference.startIndex,
              let column = Int(reference[reference.index(after: hash)...]), column >= 1,
              let forms = texts[String(reference[..<hash])], column <= forms.count else { return nil }
        let text = forms[column - 1]
        return text.isEmpty ? nil : text
    }

    /// `text` with every `=CODE=` it holds replaced; the references `codes` cannot resolve
    /// (none at all when `codes` is nil) are left as written and returned, in order, once each.
    /// A reference is `=`, 1 to 64 characters without spaces or `=`, and `=`.
    /// - Parameter render: fills the variables of each piece (the text between references, and
    ///   each reference's inside before it is looked up: `={uploader}=`). A reference whose inside
    ///   comes out empty is dropped; a variable's value is never itself taken for a reference.
    public static func replace(in text: String, with codes: CodeReplacements?,
                               render: (Substring) -> String = { String($0) }) -> (text: String, unknown: [String]) {
        // Scanned as UTF-8 (`=` and the spaces that end a reference are ASCII): a photo's dozen
        // texts take microseconds.
        let utf8 = text.utf8
        var out = "", unknown: [String] = []
        var index = text.startIndex, literal = text.startIndex
        while let open = utf8[index...].firstIndex(of: 0x3D) {
            let afterOpen = utf8.index(after: open)
            var end = afterOpen
            while end < utf8.endIndex, utf8[end] != 0x3D, !isSpace(utf8[end]) { end = utf8.index(after: end) }
            let name = text[afterOpen..<end]
            guard end > afterOpen, end < utf8.endIndex, utf8[end] == 0x3D, utf8.distance(from: afterOpen, to: end) <= 4 * maxCode,
                  name.count <= maxCode, !name.contains(where: \.isWhitespace) else {
                index = afterOpen  // a plain `=`
                continue
            }
            if literal < open { out += render(text[literal..<open]) }
            let reference = render(name)
            let afterClose = utf8.index(after: end)
            if reference.isEmpty {
                index = afterClose
                literal = afterClose
            } else if let replacement = codes?.text(for: Substring(reference)) {
                out += replacement
                index = afterClose
                literal = afterClose
            } else {
                // Left as written; its closing `=` may open the next reference (`=x=7=`).
                let written = "=" + reference + "="
                if !unknown.contains(written) { unknown.append(written) }
                out += "=" + reference
                index = end
                literal = end
            }
        }
        if literal < text.endIndex { out += render(text[literal...]) }
        return (out, unknown)
    }
}
