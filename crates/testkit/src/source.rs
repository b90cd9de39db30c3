//! Reading the workspace's own Rust sources, for the architecture tests (module graph, rules
//! written once).

/// The code of a source file before its unit-test module (`#[cfg(test)]` then `mod …`),
/// without `//` comments (doc comments included), one line per line.
pub fn code_before_tests(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod "))
        {
            break;
        }
        out.push_str(line.split("//").next().unwrap_or(""));
        out.push('\n');
    }
    out
}
