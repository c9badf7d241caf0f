import Foundation
import Testing

/// What the core and the memory store may be made of, read from their
/// sources. The core is what an app links to predict the chrome locally:
/// the Swift standard library alone, so that it brings no lock, no
/// Foundation and no C along. Pointer code stays where it must be, in as
/// few files as can be read closely.
@Suite struct SourceBoundaryTests {
    private static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// Each Swift file of `target` by name, its lines without comments.
    private static func code(of target: String) throws -> [String: [Substring]] {
        let folder = sources.appendingPathComponent(target)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".swift") }
        #expect(!names.isEmpty, "no sources found for \(target)")
        var code: [String: [Substring]] = [:]
        for name in names {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            code[name] = text.split(separator: "\n").filter {
                !$0.drop(while: { $0 == " " }).hasPrefix("//")
            }
        }
        return code
    }

    /// The files of `target` with unsafe pointer code.
    private static func unsafeFiles(of target: String) throws -> Set<String> {
        Set(try code(of: target).filter { $0.value.contains { $0.lowercased().contains("unsafe") } }.keys)
    }

    @Test func coreImportsNothing() throws {
        for (name, lines) in try Self.code(of: "TopChromeCore") {
            let imports = lines.filter { $0.split(separator: " ").contains("import") }
            #expect(imports.isEmpty, "\(name) imports \(imports)")
        }
    }

    @Test func coreHasNoDependenciesInThePackage() throws {
        let manifest = try String(contentsOf: Self.sources.deletingLastPathComponent().appendingPathComponent("Package.swift"),
                                  encoding: .utf8)
        #expect(manifest.contains(#".target(name: "TopChromeCore"),"#))
    }

    @Test func coreKeepsPointerCodeInOneFile() throws {
        #expect(try Self.unsafeFiles(of: "TopChromeCore") == ["TextFastPath.swift"])
    }

    @Test func memoryStoreKeepsPointerCodeInItsTableAndShards() throws {
        #expect(try Self.unsafeFiles(of: "MemorySessionStore") == ["SessionTable.swift", "InMemoryShards.swift"])
    }
}
