import Codecs
import Finishing
import Foundation
import System
import Pixels

/// What each finished photo adds for the whole-set outputs: its thumbnail for `report.html`
/// and, with `colorCard`, its dominant colour.
enum SetExtras {
    /// The thumbnails' folder inside the batch folder.
    static let thumbnailFolder = "thumbs"
    /// JPEG quality of thumbnails: small files, no visible blocks at their size.
    static let thumbnailQuality = 80

    /// Writes `thumbs/<stem>.jpg` and fills the item's `thumbnail` and `color`. A thumbnail
    /// that cannot be written becomes a warning on the item: the photo itself is finished.
    /// Its bytes are synced, not its folder (`AtomicFile.Durability.contents`): the batch
    /// syncs `thumbs/` once, before publishing.
    static func record(_ preview: Image, stem: String, folder: String, color: Bool,
                       into item: inout Report.Item) {
        if color { item.color = DominantColor.of(preview).hex }
        let name = thumbnailFolder + "/" + stem + ".jpg"
        do {
            try Files.makeDirectories(folder + "/" + thumbnailFolder)
            let bytes = try encodeImage(preview, options: EncodeOptions(format: .jpeg, quality: thumbnailQuality))
            try AtomicFile.write(bytes, to: folder + "/" + name, .contents)
            item.thumbnail = name
        } catch {
            item.warnings = (item.warnings ?? []) + ["no thumbnail for report.html: \(error)"]
        }
    }
}
