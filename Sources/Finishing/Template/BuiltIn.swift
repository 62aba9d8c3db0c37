extension Template {
    /// The built-in default template ("web"): long side 2048 px, JPEG quality 88, location
    /// stripped, colour profile kept. Used by `watch` and the demo when no template is named.
    public static var builtInDefault: Template {
        var t = Template(name: "default", sha256: "built-in", directory: ".")
        t.resize = .longSide(2048)
        t.output.format = .format(.jpeg)
        t.output.quality = 88
        t.output.metadata = .stripLocation
        return t
    }
}
