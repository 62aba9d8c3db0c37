/// Text variables (`{camera} · {date}`) in `text.text`, `tile.text`, `output.credit`,
/// `output.name` and `metadata`: the photo's own facts, filled in per photo. Pure: no files, no
/// EXIF parsing.
public enum Variables {
    /// The variables of the marks, the credit and the metadata.
    public static let photo = ["filename", "stem", "date", "time", "year", "camera", "lens", "batch", "index", "count",
                               "hotFolder", "uploader"]
    /// The text and QR code marks also know the batch's share link (`{shareURL}`).
    public static let marks = photo + ["shareURL"]
    /// `output.name` also knows the output's variant and crop ratio.
    public static let name = photo + ["variant", "ratio"]

    /// One piece of a text: literal or a variable.
    enum Piece: Equatable {
        case literal(String)
        case variable(String)
    }

    /// Splits `text` at its `{name}` variables (a brace that does not start `{letters}` is
    /// just a brace).
    static func pieces(_ text: String) -> [Piece] {
        var pieces: [Piece] = []
        var literal = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            literal += rest[..<open]
            let afterOpen = rest.index(after: open)
            let name = rest[afterOpen...].prefix { $0.isASCII && $0.isLetter }
            let close = name.endIndex
            if !name.isEmpty, close < rest.endIndex, rest[close] == "}" {
                if !literal.isEmpty { pieces.append(.literal(literal)); literal = "" }
                pieces.append(.variable(String(name)))
                rest = rest[rest.index(after: close)...]
            } else {
                literal += "{"
                rest = rest[afterOpen...]
            }
        }
        literal += rest
        if !literal.isEmpty { pieces.append(.literal(literal)) }
        return pieces
    }

    /// The variables `text` uses that are not in `known`, in order of appearance.
    public static func unknown(in text: String, known: [String]) -> [String] {
        pieces(text).compactMap { piece in
            if case .variable(let name) = piece, !known.contains(name) { return name }
            return nil
        }
    }

    /// True when `text` has any variable.
    public static func uses(_ text: String) -> Bool {
        pieces(text).contains { if case .variable = $0 { true } else { false } }
    }

    /// `text` with every variable filled in from `values`; a variable with no value (or an
    /// empty one) becomes empty and is returned in `missing`.
    public static func render(_ text: String, _ values: [String: String]) -> (text: String, missing: [String]) {
        guard text.utf8.contains(UInt8(ascii: "{")) else { return (text, []) }
        var out = "", missing: [String] = []
        for piece in pieces(text) {
            switch piece {
            case .literal(let s): out += s
            case .variable(let name):
                if let value = values[name], !value.isEmpty { out += value } else if !missing.contains(name) {
                    missing.append(name)
                }
            }
        }
        return (out, missing)
    }
}

/// The facts one photo's variables are filled from.
public struct PhotoFacts: Sendable, Equatable {
    /// The file name as dropped.
    public var filename: String = ""
    /// The stem outputs are named with, when it is not simply the file name's (a batch makes
    /// repeated stems unique: `IMG_1-2`).
    public var stem: String?
    /// The batch id, the photo's 1-based place in it and the number of photos.
    public var batch: String = ""
    public var index: Int = 1
    public var count: Int = 1
    /// EXIF DateTimeOriginal as written ("YYYY:MM:DD HH:MM:SS").
    public var captured: String?
    public var make: String?
    public var model: String?
    public var lens: String?
    /// The hot folder's name (nil for `photofinish run`).
    public var hotFolder: String?
    /// The web console user who uploaded the photo (nil: it came another way, or its file
    /// system keeps no extended attributes: see `Uploader`).
    public var uploader: String?
    /// The batch's share link (`{shareURL}`), when the hot folder has one to give.
    public var shareURL: String?

    public init(filename: String = "", batch: String = "", index: Int = 1, count: Int = 1) {
        self.filename = filename
        self.batch = batch
        self.index = index
        self.count = count
    }

    /// Every variable's value; facts the photo lacks are absent.
    public var values: [String: String] {
        var v: [String: String] = ["filename": filename, "stem": stem ?? Self.stem(filename), "batch": batch,
                                   "index": String(index), "count": String(count)]
        if let (date, time) = Self.dateAndTime(captured) {
            v["date"] = date
            v["time"] = time
            v["year"] = String(date.prefix(4))
        }
        v["camera"] = Self.camera(make: make, model: model)
        v["lens"] = lens.flatMap { $0.isEmpty ? nil : $0 }
        v["hotFolder"] = hotFolder
        v["uploader"] = uploader
        v["shareURL"] = shareURL.flatMap { $0.isEmpty ? nil : $0 }
        return v
    }

    /// The name without its last extension ("IMG_1.HEIC" → "IMG_1"; ".hidden" stays).
    public static func stem(_ name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// "YYYY:MM:DD HH:MM:SS" → ("YYYY-MM-DD", "HH:MM"); nil when it is not a date (cameras
    /// without a clock write "0000:00:00 00:00:00" or spaces).
    static func dateAndTime(_ exif: String?) -> (String, String)? {
        guard let exif else { return nil }
        let digits = Array(exif.utf8)
        guard digits.count >= 16 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            let part = digits[range]
            guard part.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            return Int(String(decoding: part, as: UTF8.self))
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16),
              year > 0, (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60 else { return nil }
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let paddedYear = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return ("\(paddedYear)-\(two(month))-\(two(day))", "\(two(hour)):\(two(minute))")
    }

    /// Make and Model without the make said twice: "Canon" + "Canon EOS R5" → "Canon EOS R5",
    /// "NIKON CORPORATION" + "NIKON Z 6" → "NIKON Z 6", "Apple" + "iPhone 15 Pro" → "Apple
    /// iPhone 15 Pro".
    static func camera(make: String?, model: String?) -> String? {
        let make = make?.trimmingSpaces ?? "", model = model?.trimmingSpaces ?? ""
        if model.isEmpty { return make.isEmpty ? nil : make }
        guard let brand = make.split(separator: " ").first, !brand.isEmpty else { return model }
        return model.lowercased().hasPrefix(brand.lowercased()) ? model : make + " " + model
    }
}

extension String {
    /// Without the white space at either end.
    var trimmingSpaces: String {
        var s = Substring(self)
        while s.first?.isWhitespace == true { s.removeFirst() }
        while s.last?.isWhitespace == true { s.removeLast() }
        return String(s)
    }
}
