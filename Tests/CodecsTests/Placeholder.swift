import Testing

@Test func CodecsBuilds() { #expect(Bool(true)) }
