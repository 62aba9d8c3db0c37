internal import CResample
import Foundation

/// Which build of the resampler's inner loops runs (`CResample`): AVX2 on a CPU that has it,
/// SSE2 (every x86-64) otherwise. Both compute the same integer sums, so they give the same
/// bytes; AVX2 takes twice the values per instruction.
///
/// `PHOTOFINISH_SIMD=sse2` in the environment makes a process use SSE2 (to compare, or to rule
/// the wide path out); anything else, or nothing, lets the CPU decide.
public enum ResampleKernels: Sendable, CaseIterable, CustomStringConvertible {
    case sse2
    case avx2

    /// The build this process uses, decided once from the CPU and `PHOTOFINISH_SIMD`.
    public static let current = choose(cpuHasAVX2: cpuHasAVX2,
                                       request: ProcessInfo.processInfo.environment["PHOTOFINISH_SIMD"])

    /// Whether this CPU (and the kernel, for the wide registers) runs AVX2.
    public static let cpuHasAVX2 = pf_simd_cpu_has_avx2() != 0

    /// The builds this machine can run.
    public static var available: [ResampleKernels] { cpuHasAVX2 ? [.sse2, .avx2] : [.sse2] }

    /// The build for a CPU with or without AVX2 and a `PHOTOFINISH_SIMD` value (nil: unset):
    /// AVX2 where the CPU has it unless "sse2" is asked for; SSE2 without it, whatever is asked.
    public static func choose(cpuHasAVX2: Bool, request: String?) -> ResampleKernels {
        cpuHasAVX2 && request != "sse2" ? .avx2 : .sse2
    }

    public var description: String {
        switch self {
        case .sse2: "sse2"
        case .avx2: "avx2"
        }
    }

    /// The C library's name for it.
    var simd: Int32 {
        switch self {
        case .sse2: Int32(PF_SIMD_SSE2)
        case .avx2: Int32(PF_SIMD_AVX2)
        }
    }
}
