import Batches
import Configuration
import Finishing
import Foundation
import System
import Service

/// `photofinish proof --template F [--out DIR]`: the template tried on the built-in mixed set
/// (reference: `photofinish proof`), written as one contact sheet `<out>/proof-<template name>.png`
/// (default out: the current folder).
enum ProofCommand {
    static func main(_ a: Arguments) throws(UsageError) -> Int32 {
        guard let templatePath = a[.template] else { throw UsageError("proof needs --template FILE") }
        guard a.positional.isEmpty else { throw UsageError("proof takes no photos: it makes its own (unexpected '\(a.positional[0])')") }
        let template: Template
        var maxPixels = Config.defaults.maxPixels
        do {
            template = try TemplateLoader.load(path: templatePath)
            if let configPath = a[.config] { maxPixels = try Config.load(path: configPath).maxPixels }
        } catch {
            for e in error.errors { Terminal.note(e.description) }
            return 2
        }
        let out = a[.out] ?? "."
        let path = out + "/" + fileName(template.name)
        Terminal.note("rendering the template '\(template.name)' on 6 sample photos (landscape, portrait, 48 MP, screenshot, square, panorama) …")
        do {
            try Files.makeDirectories(out)
            let sheet = try Proof.render(template: template, shrink: ProofKeeper.sampleShrink(), maxPixels: maxPixels)!
            try AtomicFile.write(sheet.png, to: path)
            for note in sheet.notes { Terminal.note(note) }
            for failure in sheet.failures { Terminal.error(failure) }
            print("\(path): \(sheet.outputs) output\(sheet.outputs == 1 ? "" : "s") of 6 sample photos, \(sheet.layout.width)×\(sheet.layout.height)")
            return sheet.failures.isEmpty ? 0 : 1
        } catch {
            Terminal.error("cannot write \(path): \(error)")
            return 2
        }
    }

    /// `proof-<template name>.png`.
    static func fileName(_ template: String) -> String { "proof-\(template).png" }
}
