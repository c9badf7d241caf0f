/// Which build is running, as `topchrome --version` and `/metrics` name it.
public enum BuildInfo {
    /// The commit the binary was built from (`git rev-parse --short HEAD`),
    /// embedded at build time; nil for a build made outside a git checkout.
    public static var commit: String? { embeddedCommit }

    /// The commit as shown to people and in metric labels.
    public static var commitText: String { commit ?? "unknown" }
}
