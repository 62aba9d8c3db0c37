import Testing

@Test func FinishingBuilds() { #expect(Bool(true)) }
