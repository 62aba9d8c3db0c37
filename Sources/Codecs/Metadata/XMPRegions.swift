import Foundation

/// MWG regions (`mwg-rs:Regions`, Metadata Working Group guidelines 2.0 §5.9): the faces,
/// pets and focus areas a camera, a phone or a photo manager marked on the photo.
public struct XMPRegions: Sendable, Equatable {
    /// `mwg-rs:AppliedToDimensions`: the pixel size the regions were measured on, when given.
    public var appliedTo: (width: Int, height: Int)?
    public var list: [XMPRegion]

    public init(appliedTo: (width: Int, height: Int)?, list: [XMPRegion]) {
        self.appliedTo = appliedTo
        self.list = list
    }

    public static func == (a: XMPRegions, b: XMPRegions) -> Bool {
        a.appliedTo?.width == b.appliedTo?.width && a.appliedTo?.height == b.appliedTo?.height && a.list == b.list
    }

    /// The regions on the upright photo. They are written for the photo as it is shown (MWG,
    /// and what Picasa, Lightroom, digiKam and phones do); when `AppliedToDimensions` names
    /// the stored size of a photo whose orientation swaps its sides, they were measured on
    /// the stored pixels and are turned with the photo here.
    /// - Parameters:
    ///   - stored: the photo's size as stored (before orientation).
    ///   - orientation: its EXIF orientation, 1–8.
    public func upright(stored: (width: Int, height: Int), orientation: Int) -> [XMPRegion] {
        guard measuredOnStoredPixels(stored: stored, orientation: orientation) else { return list }
        return list.map { region in
            var turned = region
            turned.area = region.area.oriented(orientation)
            return turned
        }
    }
}

extension XMPRegions {
    /// True when `AppliedToDimensions` names the stored size of a photo whose orientation
    /// swaps its sides: the regions were measured on the stored pixels.
    public func measuredOnStoredPixels(stored: (width: Int, height: Int), orientation: Int) -> Bool {
        guard (5...8).contains(orientation), let appliedTo, stored.width != stored.height else { return false }
        return appliedTo.width * stored.height == appliedTo.height * stored.width
    }
}

/// One region of `mwg-rs:RegionList`.
public struct XMPRegion: Sendable, Equatable {
    /// `mwg-rs:Type`: "Face", "Pet", "Focus", "BarCode", or nil.
    public var type: String?
    /// `mwg-rs:Name`: who or what it is, when named.
    public var name: String?
    public var area: Area

    public init(type: String?, name: String?, area: Area) {
        self.type = type
        self.name = name
        self.area = area
    }

    /// `mwg-rs:Area` (`stArea`, unit "normalized"): the centre and the size as fractions of the
    /// photo's width and height.
    public struct Area: Sendable, Equatable {
        /// The centre, 0…1 from the left and from the top.
        public var x: Double, y: Double
        /// Width and height, as fractions of the photo's width and height.
        public var width: Double, height: Double

        public init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x; self.y = y; self.width = width; self.height = height
        }

        /// The same area after an EXIF orientation turns the stored pixels upright.
        public func oriented(_ orientation: Int) -> Area {
            switch orientation {
            case 2: Area(x: 1 - x, y: y, width: width, height: height)
            case 3: Area(x: 1 - x, y: 1 - y, width: width, height: height)
            case 4: Area(x: x, y: 1 - y, width: width, height: height)
            case 5: Area(x: y, y: x, width: height, height: width)
            case 6: Area(x: 1 - y, y: x, width: height, height: width)
            case 7: Area(x: 1 - y, y: 1 - x, width: height, height: width)
            case 8: Area(x: y, y: 1 - x, width: height, height: width)
            default: self
            }
        }

        /// The part of this area inside `frame` (both as fractions of the same photo), as
        /// fractions of `frame`; nil when nothing of it is inside.
        public func within(_ frame: Area) -> Area? {
            let left = max(x - width / 2, frame.x - frame.width / 2)
            let right = min(x + width / 2, frame.x + frame.width / 2)
            let top = max(y - height / 2, frame.y - frame.height / 2)
            let bottom = min(y + height / 2, frame.y + frame.height / 2)
            guard right > left, bottom > top, frame.width > 0, frame.height > 0 else { return nil }
            let frameLeft = frame.x - frame.width / 2, frameTop = frame.y - frame.height / 2
            return Area(x: ((left + right) / 2 - frameLeft) / frame.width,
                        y: ((top + bottom) / 2 - frameTop) / frame.height,
                        width: (right - left) / frame.width, height: (bottom - top) / frame.height)
        }
    }
}

extension XMPPacket {
    private static let regionList = "mwg-rs:Regions/mwg-rs:RegionList"

    /// The MWG regions, nil when the packet has none. Regions without a normalized area are
    /// left out.
    public var regions: XMPRegions? {
        let ns = XMPNamespace.mwgRegions
        guard has(ns, "mwg-rs:Regions") else { return nil }
        let dimensions = "mwg-rs:Regions/mwg-rs:AppliedToDimensions/"
        var appliedTo: (Int, Int)?
        if let w = string(ns, dimensions + "stDim:w").flatMap(Self.number),
           let h = string(ns, dimensions + "stDim:h").flatMap(Self.number), w >= 1, h >= 1 {
            appliedTo = (Int(w), Int(h))
        }
        var list: [XMPRegion] = []
        for i in 0..<count(ns, Self.regionList) {
            let item = "\(Self.regionList)[\(i + 1)]/"
            guard let area = self.area(at: item + "mwg-rs:Area/") else { continue }
            list.append(XMPRegion(type: string(ns, item + "mwg-rs:Type"), name: string(ns, item + "mwg-rs:Name"),
                                  area: area))
        }
        return XMPRegions(appliedTo: appliedTo, list: list)
    }

    /// Moves every region into an output's frame: `area` gives each region's new area (nil:
    /// the region is not in the output and is removed); `AppliedToDimensions` becomes `size`.
    /// Every other field of a region (names, types, extensions) stays as it was.
    public func moveRegions(to size: (width: Int, height: Int), _ area: (XMPRegion.Area) -> XMPRegion.Area?) {
        let ns = XMPNamespace.mwgRegions
        guard has(ns, "mwg-rs:Regions") else { return }
        for i in (0..<count(ns, Self.regionList)).reversed() {
            let item = "\(Self.regionList)[\(i + 1)]"
            guard let old = self.area(at: item + "/mwg-rs:Area/") else { continue }
            guard let new = area(old) else {
                delete(ns, item)
                continue
            }
            for (field, value) in [("x", new.x), ("y", new.y), ("w", new.width), ("h", new.height)] {
                set(ns, item + "/mwg-rs:Area/stArea:" + field, Self.text(value))
            }
        }
        if count(ns, Self.regionList) == 0 {
            delete(ns, "mwg-rs:Regions")
            return
        }
        let dimensions = "mwg-rs:Regions/mwg-rs:AppliedToDimensions/"
        set(ns, dimensions + "stDim:w", String(size.width))
        set(ns, dimensions + "stDim:h", String(size.height))
        set(ns, dimensions + "stDim:unit", "pixel")
    }

    private func area(at path: String) -> XMPRegion.Area? {
        let ns = XMPNamespace.mwgRegions
        if let unit = string(ns, path + "stArea:unit"), unit != "normalized" { return nil }
        let values = ["x", "y", "w", "h"].map { string(ns, path + "stArea:" + $0).flatMap(Self.number) }
        guard let x = values[0], let y = values[1], let w = values[2], let h = values[3],
              w > 0, h > 0, w <= 1, h <= 1 else { return nil }
        return XMPRegion.Area(x: x, y: y, width: w, height: h)
    }

    private static func number(_ text: String) -> Double? {
        Double(text.trimmingCharacters(in: .whitespaces)).flatMap { $0.isFinite ? $0 : nil }
    }

    /// Six decimals: a millionth of the photo, finer than any pixel.
    private static func text(_ value: Double) -> String {
        String((value * 1_000_000).rounded() / 1_000_000)
    }
}
