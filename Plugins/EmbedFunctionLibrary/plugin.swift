import Foundation
import PackagePlugin

/// Compiles the target's `topchrome.lua` and `topchrome-rules.lua`, one after
/// the other, into it as `functionLibrary`, so the Redis store loads the same
/// text a developer can load with `redis-cli`
/// (`FUNCTION LOAD REPLACE "$(cat topchrome.lua topchrome-rules.lua)"`), and
/// no file ships beside the binary.
@main
struct EmbedFunctionLibrary: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let inputs = ["topchrome.lua", "topchrome-rules.lua"].map {
            context.package.directoryURL.appending(path: "Sources/RedisSessionStore/\($0)")
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "FunctionLibrary.swift")
        return [
            .buildCommand(
                displayName: "Embedding topchrome.lua",
                executable: try context.tool(named: "EmbedFile").url,
                arguments: inputs.map(\.path) + [output.path, "functionLibrary"],
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
