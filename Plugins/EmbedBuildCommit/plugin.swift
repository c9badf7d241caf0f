import Foundation
import PackagePlugin

/// Writes the commit being built into `BuildInfo`, so `--version` and
/// `/metrics` name the build without git at run time. A prebuild command
/// runs at every build, so a new commit is always seen; it rewrites the
/// file only when the commit changed, so an unchanged one rebuilds nothing.
/// Outside a git checkout (a source tarball, an image built without `.git`)
/// or where git cannot run, the commit is nil and is shown as "unknown".
@main
struct EmbedBuildCommit: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "generated")
        return [
            .prebuildCommand(
                displayName: "Embedding the commit being built",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", Self.script, "embed-build-commit", context.package.directoryURL.path, output.path],
                outputFilesDirectory: output
            )
        ]
    }

    /// Only hex digits are taken from git, so its output cannot be Swift code.
    static let script = #"""
        mkdir -p "$2" || exit 1
        commit=$(git -C "$1" rev-parse --short HEAD 2>/dev/null) || commit=
        case $commit in
          ''|*[!0-9a-f]*) value=nil ;;
          *) value="\"$commit\"" ;;
        esac
        file="$2/EmbeddedCommit.swift"
        printf '// Made by the EmbedBuildCommit plugin at build time.\nlet embeddedCommit: String? = %s\n' "$value" > "$file.new"
        if cmp -s "$file.new" "$file"; then rm -f "$file.new"; else mv "$file.new" "$file"; fi
        """#
}
