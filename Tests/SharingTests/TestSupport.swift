// The helpers every test target shares (Tests/TestSupport): decodeRGB/decodeWhole, Poll.until,
// Locked, TemporaryFolder; seen in every file of this target.
@_exported import TestSupport
