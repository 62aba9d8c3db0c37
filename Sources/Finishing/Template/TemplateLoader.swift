import Codecs
import Foundation
import JSON5
import QR
import System

/// Reads template files (reference: Templates) and validates every key.
///
/// All problems are collected, each naming the file, line and key path, so an admin fixes
/// a template in one pass: `shop.json5:12: text.capHeight: must be a number between 0 and
/// 0.5, got 3`.
public enum TemplateLoader {
    /// Reads, hashes and validates the template at `path`. Its name is the file stem and
    /// its directory (for logo files) the file's folder.
    /// - Throws: `JSON5Errors` with every problem found, or one naming the unreadable file.
    public static func load(path: String) throws(JSON5Errors) -> Template {
        let bytes = try JSON5File.read(path)
        let file = Files.absolute(path)
        var template = try parse(text: String(decoding: bytes, as: UTF8.self), file: path, name: stem(of: file),
                                 directory: folder(of: file))
        template.sha256 = SHA256.hex(of: bytes)
        template.file = file
        return template
    }

    /// The folder of an absolute path, as `URL.deletingLastPathComponent` gives it
    /// (`/etc/photofinish/templates` for `…/templates/shop.json5`, `/` for `/shop.json5`).
    static func folder(of path: String) -> String {
        var parts = path.split(separator: "/")
        guard !parts.isEmpty else { return "/" }
        parts.removeLast()
        return "/" + parts.joined(separator: "/")
    }

    /// A file's name without its extension, as `URL.deletingPathExtension` gives it
    /// (`shop` for `shop.json5`, `a.b` for `a.b.json5`, `.json5` for `.json5`).
    static func stem(of path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
        return String(name[..<dot])
    }

    /// Validates template text that is already in memory. `sha256` is computed from the
    /// text's UTF-8 bytes (the same as `load` for a UTF-8 file).
    /// - Parameters:
    ///   - text: the JSON5 text.
    ///   - file: how errors name the file.
    ///   - name: the template's name.
    ///   - directory: the folder logo paths are relative to (the logo file is checked there).
    ///   - files: the texts of the codes files the template names, as kept when it was first
    ///     loaded (`Template.codesFiles`), by the name the template gives them: read from
    ///     these, not the disk (nil: from the disk).
    /// - Throws: `JSON5Errors` with every problem found.
    public static func parse(text: String, file: String, name: String,
                             directory: String, files: [String: String]? = nil) throws(JSON5Errors) -> Template {
        var document = JSON5Document(text: text, file: file)
        var template = Template(name: name, sha256: SHA256.hex(of: Array(text.utf8)), directory: directory)
        if let root = document.root {
            TemplateRules(directory: directory, files: files).read(root, into: &template, &document)
        }
        guard document.errors.isEmpty else { throw JSON5Errors(errors: document.sortedErrors) }
        return template
    }

    /// Loads each template and returns every problem found (empty: all are valid). For
    /// `photofinish check`.
    public static func check(paths: [String]) -> [JSON5Error] {
        var errors: [JSON5Error] = []
        for path in paths {
            do throws(JSON5Errors) {
                _ = try load(path: path)
            } catch {
                errors += error.errors
            }
        }
        return errors
    }
}

/// The rules of the templates (reference: Templates), key by key. Defaults are those of `Template`.
private struct TemplateRules {
    let directory: String
    /// The codes files' texts as kept (`TemplateLoader.parse`), or nil: read from the disk.
    let files: [String: String]?
    /// Where the keys read sit (`variants[2]` for a variant's own keys).
    var prefix: [KeyPathComponent] = []

    typealias Path = [KeyPathComponent]

    static let rootKeys = ["version", "order", "resize", "crops", "cropFocus", "frame", "text", "logo", "tile", "qr",
                           "stitch", "colorCard", "harmonize", "output", "metadata", "originals", "damaged", "variants"]
    /// What a variant may override: everything one photo's outputs are made with.
    static let variantKeys = ["name", "resize", "crops", "cropFocus", "frame", "text", "logo", "tile", "qr", "output", "metadata"]
    /// Largest pixel size worth asking for (JPEG's limit).
    static let maxDimension = 65_535
    static let fraction = NumberRange(lower: 0, upper: 1)
    static let unitOpenBelow = NumberRange(lower: 0, lowerOpen: true, upper: 1)

    func read(_ root: [String: JSON5Value], into template: inout Template, _ doc: inout JSON5Document) {
        // A config given where a template belongs: one error that says so, not one per key.
        if root["version"] == nil, let key = ["inboxes", "templatesDir"].first(where: { root[$0] != nil }) {
            doc.fail([], "this is a config (it has '\(key)'), not a template: check it with photofinish check --config \(doc.file)")
            return
        }
        _ = doc.object(.object(root), at: [], allowed: Self.rootKeys)
        if let version = root["version"] {
            if case .number(1) = version {} else {
                doc.fail([.key("version")], "must be 1 (the only template version this PhotoFinish reads), got \(version.shown)")
            }
        } else {
            doc.fail([], "missing key 'version': start the template with version: 1")
        }
        if let value = root["order"], let order = doc.choice(value, at: [.key("order")], as: Template.Order.self) {
            template.order = order
        }
        if let value = root["resize"] { template.resize = resize(value, doc: &doc) }
        if let value = root["crops"] { template.crops = crops(value, doc: &doc) }
        if let value = root["cropFocus"],
           let focus = doc.choice(value, at: [.key("cropFocus")], as: Template.CropFocus.self) {
            template.cropFocus = focus
        }
        if let value = root["frame"] { template.frame = frame(value, doc: &doc) }
        if let value = root["text"] { template.text = text(value, doc: &doc) }
        if let value = root["logo"] { template.logo = logo(value, doc: &doc) }
        if let value = root["tile"] { template.tile = tile(value, doc: &doc) }
        if let value = root["qr"] { template.qr = qr(value, doc: &doc) }
        if let value = root["stitch"] { template.stitch = stitch(value, doc: &doc) }
        if let value = root["colorCard"], let on = doc.bool(value, at: [.key("colorCard")]) {
            template.colorCard = on
        }
        if let value = root["harmonize"] { template.harmonize = harmonize(value, doc: &doc) }
        if let value = root["output"], let output = output(value, base: Template.Output(), doc: &doc) {
            template.output = output
        }
        if let value = root["metadata"] { template.metadata = metadata(value, doc: &doc) }
        if let value = root["originals"],
           let originals = doc.choice(value, at: [.key("originals")], as: Template.Originals.self) {
            template.originals = originals
        }
        if let value = root["damaged"], let damaged = doc.choice(value, at: [.key("damaged")], as: DamagePolicy.self) {
            template.damaged = damaged
        }
        if let value = root["variants"] { template.variants = variants(value, base: template, doc: &doc) }
        // A variant that keeps the template's name pattern is checked with it, once.
        for (variant, recipe) in template.recipes where variant == nil || recipe.output.name != template.output.name {
            names(recipe, variant: variant, in: template, doc: &doc)
        }
        for (index, (_, recipe)) in template.recipes.enumerated() {
            credits(recipe, variant: index == 0 ? nil : index - 1, base: template, doc: &doc)
        }
    }

    /// `variants`: each a name and the keys it overrides; `null` removes a key (`text: null`:
    /// no text mark on this product); `output` is merged key by key over the template's.
    private func variants(_ value: JSON5Value, base: Template, doc: inout JSON5Document) -> [Template.Variant] {
        let path: Path = [.key("variants")]
        guard case .array(let entries) = value else {
            doc.fail(path, "must be a list of variants like [{ name: \"thumb\", resize: { longSide: 400 } }], got \(value.shown)")
            return []
        }
        var variants: [Template.Variant] = []
        for (index, entry) in entries.enumerated() {
            let rules = TemplateRules(directory: directory, files: files, prefix: path + [.index(index)])
            guard let members = doc.object(entry, at: rules.prefix, allowed: Self.variantKeys) else { continue }
            guard let nameValue = members["name"] else {
                doc.fail(rules.prefix, "missing key 'name' (it goes into the file names, e.g. name: \"thumb\")")
                continue
            }
            guard let name = doc.string(nameValue, at: rules.prefix + [.key("name")]) else { continue }
            guard name.count <= 32, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
            else {
                doc.fail(rules.prefix + [.key("name")],
                         "must be letters, digits, '-' or '_' (at most 32: it goes into file names), got \(nameValue.shown)")
                continue
            }
            if variants.contains(where: { $0.name.lowercased() == name.lowercased() }) {
                doc.fail(rules.prefix + [.key("name")], "a second variant named \"\(name)\": each name once")
                continue
            }
            var recipe = base
            recipe.variants = []
            func given(_ key: String) -> JSON5Value? {
                guard let value = members[key] else { return nil }
                if case .null = value { return nil }
                return value
            }
            if members["resize"] != nil { recipe.resize = given("resize").flatMap { rules.resize($0, doc: &doc) } }
            if members["crops"] != nil { recipe.crops = given("crops").map { rules.crops($0, doc: &doc) } ?? [] }
            if let value = given("cropFocus"),
               let focus = doc.choice(value, at: rules.prefix + [.key("cropFocus")], as: Template.CropFocus.self) {
                recipe.cropFocus = focus
            }
            if members["frame"] != nil { recipe.frame = given("frame").flatMap { rules.frame($0, doc: &doc) } }
            if members["text"] != nil { recipe.text = given("text").flatMap { rules.text($0, doc: &doc) } }
            if members["logo"] != nil { recipe.logo = given("logo").flatMap { rules.logo($0, doc: &doc) } }
            if members["tile"] != nil { recipe.tile = given("tile").flatMap { rules.tile($0, doc: &doc) } }
            if members["qr"] != nil { recipe.qr = given("qr").flatMap { rules.qr($0, doc: &doc) } }
            if let value = given("output"), let output = rules.output(value, base: base.output, doc: &doc) {
                recipe.output = output
            }
            if members["metadata"] != nil { recipe.metadata = given("metadata").flatMap { rules.metadata($0, doc: &doc) } }
            variants.append(Template.Variant(name: name, recipe: recipe))
        }
        return variants
    }

    /// Checks that a recipe's file names cannot collide: one photo's outputs differ by ratio
    /// and variant, and photos differ by stem.
    private func names(_ recipe: Template, variant: String?, in template: Template, doc: inout JSON5Document) {
        guard let pattern = recipe.output.name else { return }
        let at: Path = (variant.flatMap { name in template.variants.firstIndex { $0.name == name } }
            .map { [.key("variants"), .index($0)] } ?? []) + [.key("output"), .key("name")]
        let used = Set(Variables.pieces(pattern).compactMap { if case .variable(let v) = $0 { v } else { nil } })
        if used.isDisjoint(with: ["stem", "filename", "index"]) {
            doc.fail(at, "needs {stem}, {filename} or {index}: without one, every photo gets the same name")
        } else if recipe.crops.count > 1 && !used.contains("ratio") {
            doc.fail(at, "needs {ratio}: this template makes \(recipe.crops.count) crops of each photo")
        } else if !template.variants.isEmpty && !used.contains("variant") {
            doc.fail(at, "needs {variant}: the template's variants would overwrite each other's files")
        }
    }

    private func resize(_ value: JSON5Value, doc: inout JSON5Document) -> Template.Resize? {
        let path: Path = prefix + [.key("resize")]
        let forms = ["longSide", "shortSide", "fit"]
        guard let members = doc.object(value, at: path, allowed: forms) else { return nil }
        let given = forms.filter { members[$0] != nil }
        guard given.count == 1 else {
            doc.fail(path, given.isEmpty
                ? "needs one of longSide: N, shortSide: N or fit: [W, H] (leave resize out for no resizing)"
                : "give only one of longSide, shortSide, fit; found \(given.joined(separator: " and "))")
            return nil
        }
        let sizes = 1...Self.maxDimension
        switch given[0] {
        case "longSide":
            return doc.integer(members["longSide"]!, at: path + [.key("longSide")], in: sizes).map { .longSide($0) }
        case "shortSide":
            return doc.integer(members["shortSide"]!, at: path + [.key("shortSide")], in: sizes).map { .shortSide($0) }
        default:
            let fitPath = path + [.key("fit")]
            guard case .array(let pair) = members["fit"]!, pair.count == 2 else {
                doc.fail(fitPath, "must be a list of two whole numbers [width, height], got \(members["fit"]!.shown)")
                return nil
            }
            let width = doc.integer(pair[0], at: fitPath + [.index(0)], in: sizes)
            let height = doc.integer(pair[1], at: fitPath + [.index(1)], in: sizes)
            guard let width, let height else { return nil }
            return .fit(width: width, height: height)
        }
    }

    private func crops(_ value: JSON5Value, doc: inout JSON5Document) -> [Template.Crop] {
        let path: Path = prefix + [.key("crops")]
        guard case .array(let entries) = value else {
            doc.fail(path, "must be a list of ratios like [\"1:1\", \"4:5\"], got \(value.shown)")
            return []
        }
        var crops: [Template.Crop] = []
        var seen: [String: (index: Int, label: String)] = [:]  // by reduced ratio: "2:2" repeats "1:1"
        for (index, entry) in entries.enumerated() {
            let entryPath = path + [.index(index)]
            var ratioValue = entry
            var ratioPath = entryPath
            var skip: Double?
            var focus: Template.CropFocus?
            if case .object = entry {
                guard let members = doc.object(entry, at: entryPath, allowed: ["ratio", "skipIfCutOver", "focus"])
                else { continue }
                guard let ratio = members["ratio"] else {
                    doc.fail(entryPath, "missing key 'ratio' (e.g. ratio: \"16:9\")")
                    continue
                }
                ratioValue = ratio
                ratioPath = entryPath + [.key("ratio")]
                if let value = members["skipIfCutOver"] {
                    skip = doc.number(value, at: entryPath + [.key("skipIfCutOver")], in: Self.fraction)
                    if skip == nil { continue }
                }
                if let value = members["focus"] {
                    focus = doc.choice(value, at: entryPath + [.key("focus")], as: Template.CropFocus.self)
                    if focus == nil { continue }
                }
            }
            guard let crop = Self.ratio(ratioValue) else {
                doc.fail(ratioPath, "must be a ratio \"W:H\" of two positive whole numbers (like \"4:5\") or { ratio, skipIfCutOver, focus }, got \(ratioValue.shown)")
                continue
            }
            let divisor = Self.gcd(crop.width, crop.height)
            let reduced = "\(crop.width / divisor):\(crop.height / divisor)"
            if let first = seen[reduced] {
                doc.fail(ratioPath, "the same ratio as crops[\(first.index)] (\(first.label)): each ratio once")
                continue
            }
            seen[reduced] = (index, crop.label)
            crops.append(Template.Crop(label: crop.label, width: crop.width, height: crop.height, skipIfCutOver: skip,
                                       focus: focus))
        }
        return crops
    }

    private static func ratio(_ value: JSON5Value) -> (label: String, width: Int, height: Int)? {
        guard case .string(let label) = value else { return nil }
        let parts = label.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2,
              parts.allSatisfy({ !$0.isEmpty && $0.count <= 5 && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
              let width = Int(parts[0]), let height = Int(parts[1]), width > 0, height > 0 else { return nil }
        return (label, width, height)
    }

    private static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }

    private func frame(_ value: JSON5Value, doc: inout JSON5Document) -> Template.Frame? {
        let path: Path = prefix + [.key("frame")]
        guard let members = doc.object(value, at: path, allowed: ["width", "color"]) else { return nil }
        guard let widthValue = members["width"] else {
            doc.fail(path, "missing key 'width' (the border as a fraction of the short side, e.g. 0.05)")
            return nil
        }
        let width = doc.number(widthValue, at: path + [.key("width")], in: NumberRange(lower: 0, upper: 0.5))
        var color = Template.Color.white
        if let value = members["color"] {
            guard let parsed = doc.color(value, at: path + [.key("color")]) else { return nil }
            color = parsed
        }
        return width.map { Template.Frame(width: $0, color: color) }
    }

    /// Reads `position` (one of the nine, or "auto") and `positions` (the places "auto"
    /// chooses among) into `target` and `auto` when present and valid.
    private func position(_ members: [String: JSON5Value], _ path: Path, _ target: inout Template.Position,
                          auto: inout [Template.Position]?, doc: inout JSON5Document) {
        if let value = members["position"] {
            if case .string("auto") = value {
                auto = Template.cornerPositions
            } else if case .string(let name) = value, Template.Position(rawValue: name) == nil {
                let names = Template.Position.allCases.map(\.rawValue) + ["auto"]
                var message = "must be one of \(names.map { "\"\($0)\"" }.joined(separator: ", ")), got \(value.shown)"
                if let suggestion = Suggest.closest(to: name, in: names) { message += " (did you mean \"\(suggestion)\"?)" }
                doc.fail(path + [.key("position")], message)
            } else if let position = doc.choice(value, at: path + [.key("position")], as: Template.Position.self) {
                target = position
            }
        }
        guard let value = members["positions"] else { return }
        let listPath = path + [.key("positions")]
        guard case .array(let entries) = value, !entries.isEmpty else {
            doc.fail(listPath, "must be a list of places for position: \"auto\" to choose among, like [\"bottom-right\", \"top-right\"], got \(value.shown)")
            return
        }
        var places: [Template.Position] = []
        for (index, entry) in entries.enumerated() {
            if let place = doc.choice(entry, at: listPath + [.index(index)], as: Template.Position.self),
               !places.contains(place) {
                places.append(place)
            }
        }
        if auto == nil {
            doc.fail(listPath, "is only used with position: \"auto\" (set position: \"auto\" or remove positions)")
        } else if places.count == entries.count {
            auto = places
        }
    }

    /// Reads a mark's `color` ("#rrggbb" or "auto") and `autoColors` ({ light, dark }).
    /// - Returns: the fixed colour when one was written, and the auto pair when "auto".
    private func markColor(_ members: [String: JSON5Value], _ path: Path,
                           doc: inout JSON5Document) -> (fixed: Template.Color?, auto: Template.AutoColors?) {
        var fixed: Template.Color?
        var auto: Template.AutoColors?
        if let value = members["color"] {
            if case .string("auto") = value {
                auto = Template.AutoColors()
            } else if case .string(let text) = value, !text.hasPrefix("#") {
                doc.fail(path + [.key("color")], "must be a colour written \"#rgb\", \"#rrggbb\" or \"#rrggbbaa\", or \"auto\", got \(value.shown)")
            } else {
                fixed = doc.color(value, at: path + [.key("color")])
            }
        }
        if let value = members["autoColors"] {
            let pairPath = path + [.key("autoColors")]
            if let pair = doc.object(value, at: pairPath, allowed: ["light", "dark"]) {
                var colours = Template.AutoColors()
                if let light = pair["light"], let colour = doc.color(light, at: pairPath + [.key("light")]) {
                    colours.light = colour
                }
                if let dark = pair["dark"], let colour = doc.color(dark, at: pairPath + [.key("dark")]) {
                    colours.dark = colour
                }
                if auto == nil {
                    doc.fail(pairPath, "is only used with color: \"auto\" (set color: \"auto\" or remove autoColors)")
                } else {
                    auto = colours
                }
            }
        }
        return (fixed, auto)
    }

    /// Reads the number at `key` into `target` when present and valid.
    private func number(_ members: [String: JSON5Value], _ key: String, _ path: Path, _ range: NumberRange,
                        _ target: inout Double, doc: inout JSON5Document) {
        if let value = members[key], let number = doc.number(value, at: path + [.key(key)], in: range) {
            target = number
        }
    }

    private func text(_ value: JSON5Value, doc: inout JSON5Document) -> Template.TextMark? {
        let path: Path = prefix + [.key("text")]
        let keys = ["text", "font", "capHeight", "margin", "maxWidth", "position", "positions", "color", "autoColors",
                    "outline", "opacity", "shadow"]
        guard let members = doc.object(value, at: path, allowed: keys) else { return nil }
        // Without valid words there is no mark, but the other keys are still checked so
        // that every problem shows at once.
        var words: String?
        if let textValue = members["text"] {
            words = variables(doc.string(textValue, at: path + [.key("text")]), at: path + [.key("text")],
                              known: Variables.marks, doc: &doc)
        } else {
            doc.fail(path, "missing key 'text' (the words of the mark, e.g. text: \"© Studio\")")
        }
        var mark = Template.TextMark(text: words ?? "")
        if let value = members["font"], let font = doc.string(value, at: path + [.key("font")]) { mark.font = font }
        number(members, "capHeight", path, NumberRange(lower: 0, lowerOpen: true, upper: 0.5), &mark.capHeight, doc: &doc)
        number(members, "margin", path, NumberRange(lower: 0, upper: 0.5, upperOpen: true), &mark.margin, doc: &doc)
        number(members, "maxWidth", path, Self.unitOpenBelow, &mark.maxWidth, doc: &doc)
        position(members, path, &mark.position, auto: &mark.autoPositions, doc: &doc)
        let colour = markColor(members, path, doc: &doc)
        if let fixed = colour.fixed { mark.color = fixed }
        mark.autoColors = colour.auto
        if let value = members["outline"] {
            mark.outline = doc.number(value, at: path + [.key("outline")], in: NumberRange(lower: 0, lowerOpen: true, upper: 0.5))
        }
        number(members, "opacity", path, Self.fraction, &mark.opacity, doc: &doc)
        if let value = members["shadow"] {
            let shadowPath = path + [.key("shadow")]
            if let shadow = doc.object(value, at: shadowPath, allowed: ["opacity", "blur", "offset"]) {
                // Defaults as in the reference's example (Marks): a soft, close shadow.
                var opacity = 0.35, blur = 0.004, offset = 0.001
                number(shadow, "opacity", shadowPath, Self.fraction, &opacity, doc: &doc)
                number(shadow, "blur", shadowPath, NumberRange(lower: 0, upper: 0.1), &blur, doc: &doc)
                number(shadow, "offset", shadowPath, NumberRange(lower: -0.1, upper: 0.1), &offset, doc: &doc)
                mark.shadow = Template.Shadow(opacity: opacity, blur: blur, offset: offset)
            }
        }
        return words == nil ? nil : mark
    }

    private func logo(_ value: JSON5Value, doc: inout JSON5Document) -> Template.LogoMark? {
        let path: Path = prefix + [.key("logo")]
        guard let members = doc.object(value, at: path, allowed: ["file", "onDark", "width", "padding", "opacity",
                                                                   "position", "positions"])
        else { return nil }
        var file: String?
        if let fileValue = members["file"] {
            file = doc.string(fileValue, at: path + [.key("file")])
        } else {
            doc.fail(path, "missing key 'file' (a PNG relative to the template's folder, e.g. \"logos/studio.png\")")
        }
        var mark = Template.LogoMark(file: file ?? "")
        number(members, "width", path, Self.unitOpenBelow, &mark.width, doc: &doc)
        number(members, "padding", path, NumberRange(lower: 0, upper: 0.5, upperOpen: true), &mark.padding, doc: &doc)
        number(members, "opacity", path, Self.fraction, &mark.opacity, doc: &doc)
        position(members, path, &mark.position, auto: &mark.autoPositions, doc: &doc)
        if let value = members["onDark"], let onDark = doc.string(value, at: path + [.key("onDark")]) {
            if let problem = Self.logoProblem(file: onDark, directory: directory) {
                doc.fail(path + [.key("onDark")], problem)
            }
            mark.onDark = onDark
        }
        guard let file else { return nil }
        if let problem = Self.logoProblem(file: file, directory: directory) {
            doc.fail(path + [.key("file")], problem)
        }
        return mark
    }

    /// Why the logo file cannot be used, or `nil` when it exists and is a PNG (by its
    /// first bytes, not its name).
    static func logoProblem(file: String, directory: String) -> String? {
        let resolved = file.hasPrefix("/") ? file : (directory as NSString).appendingPathComponent(file)
        let file: FileDescriptor
        do throws(SystemError) {
            file = try FileDescriptor.open(resolved, .read)
        } catch {
            switch error.code {
            case ENOENT, ENOTDIR: return "\(resolved): not found (paths are relative to the template's folder)"
            case EACCES, EPERM: return "\(resolved): cannot be read (check its permissions)"
            default: return "\(resolved): cannot be read: \(error.reason)"
            }
        }
        let magic: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let head: [UInt8]
        do {
            head = try file.readAll(limit: 8)
        } catch {
            return "\(resolved): cannot be read: \(error.reason)"
        }
        guard head == magic else { return "\(resolved): is not a PNG file (a logo must be a PNG, ideally with alpha)" }
        return nil
    }

    /// `qr`: its text (variables and `{shareURL}`), size and place as the logo's, its colours
    /// dark on light with enough contrast for a scanner, its error correction level.
    private func qr(_ value: JSON5Value, doc: inout JSON5Document) -> Template.QRMark? {
        let path: Path = prefix + [.key("qr")]
        guard let members = doc.object(value, at: path, allowed: ["text", "width", "padding", "position", "color",
                                                                   "background", "level"])
        else { return nil }
        var mark = Template.QRMark()
        var ok = true
        if let textValue = members["text"] {
            let text = variables(doc.string(textValue, at: path + [.key("text")]), at: path + [.key("text")],
                                 known: Variables.marks, doc: &doc)
            if let text { mark.text = text } else { ok = false }
        }
        // The smallest code (21 modules and the quiet zone) needs 29 px at one pixel a module.
        number(members, "width", path, NumberRange(lower: 0.02, upper: 1), &mark.width, doc: &doc)
        number(members, "padding", path, NumberRange(lower: 0, upper: 0.5, upperOpen: true), &mark.padding, doc: &doc)
        if case .string("auto")? = members["position"] {
            doc.fail(path + [.key("position")], "must be one of the nine places (a QR code keeps its place: people are told where to scan), got \"auto\"")
        } else if let value = members["position"],
                  let position = doc.choice(value, at: path + [.key("position")], as: Template.Position.self) {
            mark.position = position
        }
        if let value = members["color"], let colour = doc.color(value, at: path + [.key("color")]) { mark.color = colour }
        if let value = members["background"], let colour = doc.color(value, at: path + [.key("background")]) {
            mark.background = colour
        }
        for (key, colour) in [("color", mark.color), ("background", mark.background)] where colour.a != 255 {
            doc.fail(path + [.key(key)], "must be opaque (a scanner reads what is under a see-through code too), got \(MarkChoice.hex(colour)) with alpha \(colour.a)")
            ok = false
        }
        let dark = MarkChoice.luminance(mark.color.r, mark.color.g, mark.color.b)
        let light = MarkChoice.luminance(mark.background.r, mark.background.g, mark.background.b)
        let contrast = MarkChoice.contrast(dark, light)
        if dark >= light {
            doc.fail(path + [.key("color")], "must be darker than background (most scanners read dark modules on a light ground), got color \(MarkChoice.hex(mark.color)) on \(MarkChoice.hex(mark.background))")
            ok = false
        } else if contrast < Template.QRMark.minimumContrast {
            doc.fail(path + [.key("color")], String(format: "contrasts %.1f:1 with background; a scanner needs at least %.0f:1 (use a darker color or a lighter background)",
                                                    contrast, Template.QRMark.minimumContrast))
            ok = false
        }
        if let value = members["level"], let level = doc.choice(value, at: path + [.key("level")], as: QRCode.Level.self) {
            mark.level = level
        }
        return ok ? mark : nil
    }

    private func tile(_ value: JSON5Value, doc: inout JSON5Document) -> Template.TileMark? {
        let path: Path = prefix + [.key("tile")]
        guard let members = doc.object(value, at: path, allowed: ["text", "angle", "size", "opacity", "gap", "color",
                                                                   "autoColors"])
        else { return nil }
        var words: String?
        if let textValue = members["text"] {
            words = variables(doc.string(textValue, at: path + [.key("text")]), at: path + [.key("text")], doc: &doc)
        } else {
            doc.fail(path, "missing key 'text' (the repeated words, e.g. text: \"PREVIEW\")")
        }
        var mark = Template.TileMark(text: words ?? "")
        number(members, "angle", path, NumberRange(lower: -180, upper: 180), &mark.angle, doc: &doc)
        number(members, "size", path, NumberRange(lower: 0, lowerOpen: true, upper: 0.5), &mark.size, doc: &doc)
        number(members, "opacity", path, Self.fraction, &mark.opacity, doc: &doc)
        number(members, "gap", path, NumberRange(lower: 0, upper: 100), &mark.gap, doc: &doc)
        let colour = markColor(members, path, doc: &doc)
        mark.color = colour.fixed
        mark.autoColors = colour.auto
        return words == nil ? nil : mark
    }

    /// `text` when every `{variable}` in it is known (else an error naming the unknown one, and nil).
    private func variables(_ text: String?, at path: Path, known: [String] = Variables.photo,
                           doc: inout JSON5Document) -> String? {
        guard let text else { return nil }
        let unknown = Variables.unknown(in: text, known: known)
        guard let first = unknown.first else { return text }
        let suggestion = Suggest.closest(to: first, in: known).map { " (did you mean {\($0)}?)" } ?? ""
        doc.fail(path, "unknown variable {\(first)}\(suggestion); known: "
                 + known.map { "{\($0)}" }.joined(separator: " "))
        return nil
    }

    private func credit(_ value: JSON5Value, doc: inout JSON5Document) -> Template.Credit? {
        let path: Path = prefix + [.key("output"), .key("credit")]
        let keys = ["creator", "copyright", "credit"]
        guard let members = doc.object(value, at: path, allowed: keys) else { return nil }
        var credit = Template.Credit()
        for key in keys {
            guard let value = members[key] else { continue }
            let text = variables(doc.string(value, at: path + [.key(key)]), at: path + [.key(key)], doc: &doc)
            switch key {
            case "creator": credit.creator = text
            case "copyright": credit.copyright = text
            default: credit.credit = text
            }
        }
        if members.isEmpty { doc.fail(path, "give at least one of creator, copyright, credit (or leave credit out)") }
        return credit
    }

    /// `metadata`: the captions (reference: Metadata templates). Every text is checked for its
    /// variables; `codes` names a codes file relative to the template's folder, read now.
    private func metadata(_ value: JSON5Value, doc: inout JSON5Document) -> Template.MetadataTemplate? {
        let path: Path = prefix + [.key("metadata")]
        let texts = ["title", "caption", "creator", "copyright", "usageTerms", "city", "country", "event"]
        guard let members = doc.object(value, at: path, allowed: texts + ["keywords", "codes"]) else { return nil }
        var metadata = Template.MetadataTemplate()
        for key in texts {
            guard let value = members[key] else { continue }
            let text = variables(doc.string(value, at: path + [.key(key)]), at: path + [.key(key)], doc: &doc)
            switch key {
            case "title": metadata.texts.title = text
            case "caption": metadata.texts.caption = text
            case "creator": metadata.texts.creator = text
            case "copyright": metadata.texts.copyright = text
            case "usageTerms": metadata.texts.usageTerms = text
            case "city": metadata.texts.city = text
            case "country": metadata.texts.country = text
            default: metadata.texts.event = text
            }
        }
        if let value = members["keywords"] {
            let listPath = path + [.key("keywords")]
            if case .array(let entries) = value, !entries.isEmpty {
                for (index, entry) in entries.enumerated() {
                    let at = listPath + [.index(index)]
                    if let keyword = variables(doc.string(entry, at: at), at: at, doc: &doc) { metadata.texts.keywords.append(keyword) }
                }
            } else {
                doc.fail(listPath, "must be a list of keywords like [\"football\", \"=7=\"], got \(value.shown)")
            }
        }
        if let value = members["codes"], let file = doc.string(value, at: path + [.key("codes")]) {
            switch codes(file) {
            case .success(let table): metadata.codes = table
            case .failure(let problem): doc.fail(path + [.key("codes")], problem.message)
            }
        }
        if members.keys.allSatisfy({ $0 == "codes" }) {
            doc.fail(path, "give at least one of \((texts + ["keywords"]).joined(separator: ", ")) (or leave metadata out)")
        }
        return metadata
    }

    /// Why a codes file cannot be used, in words.
    private struct CodesProblem: Error {
        var message: String
    }

    /// Reads the codes file `file` names (relative to the template's folder): from the texts
    /// kept with the template when there are some, else from the disk.
    private func codes(_ file: String) -> Result<CodeReplacements, CodesProblem> {
        let resolved = file.hasPrefix("/") ? file : (directory as NSString).appendingPathComponent(file)
        let text: String
        if let kept = files?[file] {
            text = kept
        } else {
            let bytes: [UInt8]?
            do {
                bytes = try Files.contents(of: resolved, limit: Self.maxCodesBytes + 1)
            } catch {
                return .failure(CodesProblem(message: "\(resolved): cannot be read: \(error.reason)"))
            }
            guard let bytes else {
                return .failure(CodesProblem(message: "\(resolved): not found (paths are relative to the template's folder)"))
            }
            guard bytes.count <= Self.maxCodesBytes else {
                return .failure(CodesProblem(message: "\(resolved): over \(Self.maxCodesBytes >> 20) MiB: is this the codes file?"))
            }
            guard let utf8 = String(validating: bytes, as: UTF8.self) else {
                let line = Self.firstInvalidLine(bytes)
                return .failure(CodesProblem(message: "\(resolved):\(line): not UTF-8 text: save the file as UTF-8 "
                                             + "(a spreadsheet's \"UTF-16\" or \"Windows\" text is not)"))
            }
            text = utf8
        }
        do throws(CodeReplacements.Problem) {
            return .success(try CodeReplacements(file: file, text: text))
        } catch {
            return .failure(CodesProblem(message: "\(resolved):\(error.line): \(error.message)"))
        }
    }

    /// The largest codes file read (a roster of thousands of names is a few hundred KiB).
    static let maxCodesBytes = 8 << 20

    /// The 1-based line of the first bytes that are not UTF-8.
    static func firstInvalidLine(_ bytes: [UInt8]) -> Int {
        var line = 1
        for part in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            if String(validating: part, as: UTF8.self) == nil { return line }
            line += 1
        }
        return line
    }

    /// A recipe gives its creator and copyright once: in `metadata` or in `output.credit`
    /// (both write EXIF Artist/Copyright, XMP dc:creator/dc:rights and IPTC By-line/CopyrightNotice).
    private func credits(_ recipe: Template, variant: Int?, base: Template, doc: inout JSON5Document) {
        guard let metadata = recipe.metadata?.texts, let credit = recipe.output.credit else { return }
        for (key, twice) in [("creator", metadata.creator != nil && credit.creator != nil),
                             ("copyright", metadata.copyright != nil && credit.copyright != nil)] where twice {
            // A variant that inherits both keys from the template is told once, there.
            if let variant, base.metadata?.texts.creator == metadata.creator, base.metadata?.texts.copyright == metadata.copyright,
               base.output.credit == credit { continue }
            // Said where the variant wrote it: its own credit, else its own metadata.
            let inCredit = variant != nil && credit != base.output.credit
            let at: Path = (variant.map { [.key("variants"), .index($0)] } ?? [])
                + (inCredit ? [.key("output"), .key("credit"), .key(key)] : [.key("metadata"), .key(key)])
            let other = inCredit ? "metadata.\(key)" : "output.credit.\(key)"
            doc.fail(at, "\(other) gives the \(key) too: give it once, in metadata or in output.credit "
                     + "(both write it to EXIF, XMP and IPTC)")
        }
    }

    private func stitch(_ value: JSON5Value, doc: inout JSON5Document) -> Template.Stitch? {
        let path: Path = prefix + [.key("stitch")]
        guard let members = doc.object(value, at: path,
                                       allowed: ["width", "spacing", "maxHeight", "background", "split", "upscale", "marks"])
        else { return nil }
        var stitch = Template.Stitch()
        let sizes = 1...Self.maxDimension
        if let value = members["width"], let width = doc.integer(value, at: path + [.key("width")], in: sizes) {
            stitch.width = width
        }
        if let value = members["spacing"],
           let spacing = doc.integer(value, at: path + [.key("spacing")], in: 0...Self.maxDimension) {
            stitch.spacing = spacing
        }
        if let value = members["maxHeight"],
           let height = doc.integer(value, at: path + [.key("maxHeight")], in: sizes) {
            stitch.maxHeight = height
        }
        if let value = members["background"], let color = doc.color(value, at: path + [.key("background")]) {
            stitch.background = color
        }
        if let value = members["split"], let split = doc.bool(value, at: path + [.key("split")]) {
            stitch.split = split
        }
        if let value = members["upscale"], let upscale = doc.bool(value, at: path + [.key("upscale")]) {
            stitch.upscale = upscale
        }
        if let value = members["marks"], let marks = doc.bool(value, at: path + [.key("marks")]) {
            stitch.marks = marks
        }
        return stitch
    }

    /// `harmonize`: `true` (every default), `false` (off), or its keys.
    private func harmonize(_ value: JSON5Value, doc: inout JSON5Document) -> Template.Harmonize? {
        let path: Path = prefix + [.key("harmonize")]
        if case .bool(let on) = value { return on ? Template.Harmonize() : nil }
        guard case .object = value else {
            doc.fail(path, "must be true, false or { whiteBalance: true, exposure: true, strength: 0.7, reference: \"median\" }, got \(value.shown)")
            return nil
        }
        guard let members = doc.object(value, at: path, allowed: ["whiteBalance", "exposure", "strength", "reference"]) else {
            return nil
        }
        var harmonize = Template.Harmonize()
        if let value = members["whiteBalance"], let on = doc.bool(value, at: path + [.key("whiteBalance")]) {
            harmonize.whiteBalance = on
        }
        if let value = members["exposure"], let on = doc.bool(value, at: path + [.key("exposure")]) {
            harmonize.exposure = on
        }
        number(members, "strength", path, Self.unitOpenBelow, &harmonize.strength, doc: &doc)
        if let value = members["reference"], let name = doc.string(value, at: path + [.key("reference")]) {
            if name == "median" {
                harmonize.reference = .median
            } else if name.contains("/") {
                doc.fail(path + [.key("reference")],
                         "must be \"median\" or the file name of a photo of the batch (no folder), got \(value.shown)")
            } else {
                harmonize.reference = .file(name)
            }
        }
        if !harmonize.whiteBalance && !harmonize.exposure {
            doc.fail(path, "whiteBalance and exposure are both false: nothing to match (remove harmonize, or turn one on)")
        }
        return harmonize
    }

    private enum FormatName: String, CaseIterable {
        case jpeg, png, heic, avif, webp, same
    }

    private func output(_ value: JSON5Value, base: Template.Output, doc: inout JSON5Document) -> Template.Output? {
        let path: Path = prefix + [.key("output")]
        let keys = ["format", "quality", "progressive", "suffix", "name", "metadata", "credit", "color",
                    "maxBytes", "sharpen"]
        guard let members = doc.object(value, at: path, allowed: keys) else { return nil }
        var output = base
        if let value = members["format"], let name = doc.choice(value, at: path + [.key("format")], as: FormatName.self) {
            output.format = ImageFormat(rawValue: name.rawValue).map { .format($0) } ?? .same
        }
        if let value = members["quality"], let quality = doc.integer(value, at: path + [.key("quality")], in: 1...100) {
            output.quality = quality
        }
        if let value = members["progressive"], let on = doc.bool(value, at: path + [.key("progressive")]) {
            output.progressive = on
        }
        if let value = members["suffix"], let suffix = doc.string(value, at: path + [.key("suffix")], nonEmpty: false) {
            if suffix.contains("/") || suffix.contains("\0") || suffix.hasPrefix(".")
                || suffix.unicodeScalars.contains(where: { $0.value < 0x20 }) || suffix.utf8.count > 64 {
                doc.fail(path + [.key("suffix")],
                         "must be safe in a file name (no '/', no control characters, not starting with '.', at most 64 bytes), got \(value.shown)")
            } else {
                output.suffix = suffix
                output.name = nil  // a variant's suffix replaces the template's name pattern
            }
        }
        if let value = members["metadata"],
           let metadata = doc.choice(value, at: path + [.key("metadata")], as: Template.Metadata.self) {
            output.metadata = metadata
        }
        if let value = members["credit"] { output.credit = credit(value, doc: &doc) }
        if let value = members["color"],
           let color = doc.choice(value, at: path + [.key("color")], as: Template.ColorPolicy.self) {
            output.color = color
        }
        if let value = members["maxBytes"] {
            let bytes: Int? = switch value {
            case .string(let text): Quantities.bytes(text)
            case .number(let n) where n == n.rounded() && n < 1e15: Int(n)
            default: nil
            }
            if let bytes, bytes >= 1024 {
                output.maxBytes = bytes
            } else {
                doc.fail(path + [.key("maxBytes")],
                         "must be a size of at least 1KiB, like \"500KiB\", \"2MB\" or a number of bytes, got \(value.shown)")
            }
        }
        if let value = members["sharpen"] {
            switch value {
            case .bool(let on): output.sharpen = on ? Template.Output.defaultSharpen : 0
            default:
                if let amount = doc.number(value, at: path + [.key("sharpen")], in: NumberRange(lower: 0, upper: 2)) {
                    output.sharpen = amount
                }
            }
        }
        if let value = members["name"], let name = doc.string(value, at: path + [.key("name")]) {
            let literal = Variables.pieces(name).compactMap { if case .literal(let l) = $0 { l } else { nil } }.joined()
            if members["suffix"] != nil {
                doc.fail(path + [.key("name")], "give name or suffix, not both (put the suffix into the name)")
            } else if literal.contains("/") || literal.contains("\\") || name.hasPrefix(".")
                        || literal.unicodeScalars.contains(where: { $0.value < 0x20 }) || name.utf8.count > 128 {
                doc.fail(path + [.key("name")],
                         "must be safe in a file name (no '/' or '\\', no control characters, not starting with '.', at most 128 bytes), got \(value.shown)")
            } else if let checked = variables(name, at: path + [.key("name")], known: Variables.name, doc: &doc) {
                output.name = checked
                output.suffix = ""
            }
        }
        return output
    }
}
