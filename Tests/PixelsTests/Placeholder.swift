import Testing

@Test func PixelsBuilds() { #expect(Bool(true)) }
