import Foundation
import PackagePlugin

/// Compiles the target's `topchrome.lua` into it as `functionLibrary`, so the
/// Redis store loads the same text a developer can load with `redis-cli`
/// (`FUNCTION LOAD REPLACE "$(cat topchrome.lua)"`), and no file ships
/// beside the binary.
@main
struct EmbedFunctionLibrary: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let input = context.package.directoryURL.appending(path: "Sources/RedisSessionStore/topchrome.lua")
        let output = context.pluginWorkDirectoryURL.appending(path: "FunctionLibrary.swift")
        return [
            .buildCommand(
                displayName: "Embedding topchrome.lua",
                executable: try context.tool(named: "EmbedFile").url,
                arguments: [input.path, output.path, "functionLibrary"],
                inputFiles: [input],
                outputFiles: [output]
            )
        ]
    }
}
