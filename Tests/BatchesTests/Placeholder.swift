import Testing

@Test func BatchesBuilds() { #expect(Bool(true)) }
