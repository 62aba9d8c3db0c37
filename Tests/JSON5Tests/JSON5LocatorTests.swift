import Testing
import JSON5

@Suite struct JSON5LocatorTests {
    @Test func nestedObjectsAndArraysGetTheirLines() {
        let text = """
        {
          // a comment with a { brace and a "quote
          resize: { longSide: 2048 },
          crops: [
            "1:1",
            /* block
               comment */ '4:5',
            { ratio: "16:9",
              skipIfCutOver: 0.5, },
          ],
          "quoted key": [[1, 2], [3,
            4]],
          'single': "a \\" string with 'quotes' and // no comment",
          after: 1,
        }
        """
        let locator = JSON5Locator(text: text)
        #expect(locator.syntaxError == nil)
        #expect(locator.lines[[.key("resize")]] == 3)
        #expect(locator.lines[[.key("resize"), .key("longSide")]] == 3)
        #expect(locator.lines[[.key("crops")]] == 4)
        #expect(locator.lines[[.key("crops"), .index(0)]] == 5)
        #expect(locator.lines[[.key("crops"), .index(1)]] == 7)
        #expect(locator.lines[[.key("crops"), .index(2)]] == 8)
        #expect(locator.lines[[.key("crops"), .index(2), .key("ratio")]] == 8)
        #expect(locator.lines[[.key("crops"), .index(2), .key("skipIfCutOver")]] == 9)
        #expect(locator.lines[[.key("quoted key"), .index(1), .index(1)]] == 12)
        #expect(locator.lines[[.key("single")]] == 13)
        #expect(locator.lines[[.key("after")]] == 14)
        // A path with no line of its own falls back to its nearest ancestor.
        #expect(locator.line(of: [.key("crops"), .index(2), .key("missing")]) == 8)
        #expect([KeyPathComponent.key("crops"), .index(2), .key("ratio")].rendered == "crops[2].ratio")
    }

    @Test func escapedKeysAreDecoded() {
        let locator = JSON5Locator(text: "{\n \"\\u0061b\": 1,\n '\\ud83d\\ude00': 2,\n \"tab\\there\": 3\n}")
        #expect(locator.syntaxError == nil)
        #expect(locator.lines[[.key("ab")]] == 2)
        #expect(locator.lines[[.key("😀")]] == 3)
        #expect(locator.lines[[.key("tab\there")]] == 4)
    }

    @Test func duplicateKeysAreFound() {
        let locator = JSON5Locator(text: "{\n a: 1,\n b: { c: 1,\n c: 2 },\n a: 3\n}")
        #expect(locator.duplicates.map(\.path) == [[.key("b"), .key("c")], [.key("a")]])
        #expect(locator.duplicates.map(\.line) == [4, 5])
    }

    @Test(arguments: [
        ("{\n a: 1,\n b: tru,\n}", 3, "'tru' is not a value"),
        ("{\n a: 1\n b: 2,\n}", 3, "expected ',' or '}'"),
        ("{\n a: 1,\n b: \"open\n}", 3, "string is not closed"),
        ("{\n a: 1,\n /* never\n closed\n}", 3, "comment '/*' is never closed"),
        ("{\n a: [1,\n 2\n", 4, "never closed"),
        ("{\n a: 1,\n}\n}", 4, "after the end"),
    ])
    func syntaxErrorsHaveLines(text: String, line: Int, message: String) {
        let error = JSON5Locator(text: text).syntaxError
        #expect(error?.line == line)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    @Test func numbersOfJSON5AreValues() {
        let locator = JSON5Locator(text: "{a: 0x1F, b: -.5, c: +1e3, d: 5., e: Infinity, f: -NaN, g: null}")
        #expect(locator.syntaxError == nil)
    }

    @Test func suggestions() {
        #expect(Suggest.closest(to: "capheight", in: ["capHeight", "margin"]) == "capHeight")
        #expect(Suggest.closest(to: "opactiy", in: ["opacity", "position"]) == "opacity")
        #expect(Suggest.closest(to: "zzz", in: ["opacity", "position"]) == nil)
    }
}
