import JSON5

extension Template.Color {
    /// Parses `#rgb`, `#rrggbb` or `#rrggbbaa` (hex digits in either case); `nil` otherwise.
    public init?(hex: String) {
        guard hex.hasPrefix("#") else { return nil }
        let digits = Array(hex.utf8.dropFirst())
        guard digits.count == 3 || digits.count == 6 || digits.count == 8 else { return nil }
        var values: [UInt8] = []
        for digit in digits {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(digit - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): values.append(digit - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): values.append(digit - UInt8(ascii: "A") + 10)
            default: return nil
            }
        }
        if values.count == 3 {
            // #abc means #aabbcc: each digit doubled, i.e. times 17.
            self.init(r: values[0] * 17, g: values[1] * 17, b: values[2] * 17)
        } else {
            var bytes: [UInt8] = []
            for i in stride(from: 0, to: values.count, by: 2) { bytes.append(values[i] << 4 | values[i + 1]) }
            self.init(r: bytes[0], g: bytes[1], b: bytes[2], a: bytes.count == 4 ? bytes[3] : 255)
        }
    }
}

extension JSON5Document {
    /// A colour written `#rgb`, `#rrggbb` or `#rrggbbaa`.
    mutating func color(_ value: JSON5Value, at path: [KeyPathComponent]) -> Template.Color? {
        guard case .string(let string) = value, let color = Template.Color(hex: string) else {
            fail(path, "must be a colour written \"#rgb\", \"#rrggbb\" or \"#rrggbbaa\", got \(value.shown)")
            return nil
        }
        return color
    }
}
