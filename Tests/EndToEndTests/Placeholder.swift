import Testing

@Test func EndToEndBuilds() { #expect(Bool(true)) }
