import Foundation
internal import CLCMS

/// ICC profiles: names for the report, and the sRGB profile PhotoFinish embeds.
public enum ICC {
    /// The profile's description tag in English ("Display P3", "sRGB IEC61966-2.1"), or nil
    /// when lcms2 can't open the profile or it has no description.
    /// - Parameter icc: the profile's bytes.
    public static func description(_ icc: [UInt8]) -> String? {
        guard !icc.isEmpty, let count = UInt32(exactly: icc.count) else { return nil }
        let profile = icc.withUnsafeBytes { cmsOpenProfileFromMem($0.baseAddress, count) }
        guard let profile else { return nil }
        defer { cmsCloseProfile(profile) }
        let length = cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", nil, 0)
        guard length > 1 else { return nil }
        var text = [CChar](repeating: 0, count: Int(length))
        _ = cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", &text, length)
        let name = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty ? nil : trimmed
    }

    /// An sRGB profile made by lcms2 (`cmsCreate_sRGBProfile`), built once.
    public static var sRGB: [UInt8] { builtSRGB }

    private static let builtSRGB: [UInt8] = {
        guard let profile = cmsCreate_sRGBProfile() else { preconditionFailure("lcms2 cannot build sRGB") }
        defer { cmsCloseProfile(profile) }
        var length: UInt32 = 0
        guard cmsSaveProfileToMem(profile, nil, &length) != 0, length > 0 else {
            preconditionFailure("lcms2 cannot save sRGB")
        }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        guard cmsSaveProfileToMem(profile, &bytes, &length) != 0 else { preconditionFailure("lcms2 cannot save sRGB") }
        return Array(bytes.prefix(Int(length)))
    }()

    /// True when the profile describes itself as sRGB (by its description: good enough to
    /// skip converting sRGB to sRGB).
    /// - Parameter icc: the profile's bytes.
    public static func isSRGB(_ icc: [UInt8]) -> Bool {
        description(icc)?.localizedCaseInsensitiveContains("srgb") ?? false
    }
}

