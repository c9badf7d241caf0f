import Foundation
import PackagePlugin

/// Compiles the top-level `openapi.yaml` into the target, so the server
/// serves its contract byte for byte with no file to ship beside the binary.
@main
struct EmbedOpenAPI: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let input = context.package.directoryURL.appending(path: "openapi.yaml")
        let output = context.pluginWorkDirectoryURL.appending(path: "OpenAPIDocument.swift")
        return [
            .buildCommand(
                displayName: "Embedding openapi.yaml",
                executable: try context.tool(named: "EmbedFile").url,
                arguments: [input.path, output.path, "openAPIDocument"],
                inputFiles: [input],
                outputFiles: [output]
            )
        ]
    }
}
