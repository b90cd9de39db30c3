//! Which names an exported AOT symbol may not take, by a rule that cannot miss a name: C and
//! C++ keywords (the header would not compile), identifiers the C standard reserves (`__x`,
//! `_X`), every symbol the C runtime libraries of the targets define (the generated code calls
//! `sin`, `exp`, … itself and would bind to its own entry point; a program linking the object
//! would have `memcpy` or `dlopen` replaced for good; `main` and `_start` are the link's), and
//! every name the C standard and POSIX headers define (`NULL`, `size_t`, `I` would break the
//! header beside them). The last two are the lists in `data/`, generated from the libraries
//! and headers themselves by `data/regenerate.sh`, not written by hand.

/// C (C23) and C++ keywords.
const KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char16_t",
    "char32_t",
    "char8_t",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "compl",
    "concept",
    "const",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "continue",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "typeof",
    "typeof_unqual",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
];

/// Every symbol the C runtime of the targets defines (glibc's libc, libm, libmvec, libpthread,
/// libdl, librt, libutil, libresolv, libanl, the dynamic loader, libgcc_s; the start files,
/// libgcc.a and libc_nonshared.a, with the names they reference, such as `main`), on x86-64 and
/// AArch64, less the reserved names. Sorted, one a line; `data/regenerate.sh` writes it and
/// `tests/symbol_lists.rs` checks that it holds what this machine's libraries export.
const C_RUNTIME: &str = include_str!("../data/c_runtime.txt");

/// Every macro and every file-scope identifier or enumeration constant of the C11/C17 standard
/// headers and the POSIX headers (with `_GNU_SOURCE`), less the reserved names; written and
/// checked like [`C_RUNTIME`].
const C_HEADERS: &str = include_str!("../data/c_headers.txt");

/// Whether the sorted one-name-a-line `list` holds `name`.
fn listed(list: &'static str, name: &str) -> bool {
    list.lines().any(|line| line == name)
}

/// Why `symbol` cannot be an exported C symbol, or `None` when it can.
pub fn symbol_problem(symbol: &str) -> Option<String> {
    let is_identifier = symbol
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && symbol
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !is_identifier {
        return Some(
            "it is not a C identifier (letters, digits and `_`, not starting with a digit)".into(),
        );
    }
    if KEYWORDS.contains(&symbol) || symbol.starts_with("_Bool") || is_c_keyword_underscore(symbol)
    {
        return Some("it is a C or C++ keyword, so the header would not compile".into());
    }
    let mut chars = symbol.chars();
    if symbol.starts_with("__")
        || (chars.next() == Some('_') && chars.next().is_some_and(|c| c.is_ascii_uppercase()))
    {
        return Some("identifiers starting with `__` or `_` and a capital letter are reserved by the C standard".into());
    }
    if listed(C_RUNTIME, symbol) {
        return Some(format!(
            "the C runtime libraries (libc, libm, libpthread, libdl, librt, ld.so, libgcc_s) \
             export `{symbol}`: a program linking the object would call the generated code \
             instead of the library (or the generated code would call itself); use a name of \
             your own, e.g. `adjit_{symbol}`"
        ));
    }
    if listed(C_HEADERS, symbol) {
        return Some(format!(
            "the C standard or POSIX headers define `{symbol}` (a macro, type, function or \
             object), so the header would not compile beside them; use a name of your own, \
             e.g. `adjit_{symbol}`"
        ));
    }
    None
}

/// `_Bool`, `_Complex`, `_Atomic`, … (the C keywords spelled with an underscore and a capital).
fn is_c_keyword_underscore(symbol: &str) -> bool {
    const UNDERSCORED: &[&str] = &[
        "_Alignas",
        "_Alignof",
        "_Atomic",
        "_BitInt",
        "_Bool",
        "_Complex",
        "_Decimal128",
        "_Decimal32",
        "_Decimal64",
        "_Generic",
        "_Imaginary",
        "_Noreturn",
        "_Static_assert",
        "_Thread_local",
    ];
    UNDERSCORED.contains(&symbol)
}

#[cfg(test)]
mod tests {
    use super::symbol_problem;

    #[test]
    fn clashing_and_reserved_names_are_refused() {
        for bad in [
            "floor",
            "sin",
            "sinf",
            "expl",
            "memcpy",
            "int",
            "return",
            "class",
            "main",
            "_start",
            "__x",
            "_Bool",
            "_Foo",
            "",
            "1abc",
            "a-b",
            "printf",
            "dlopen",
            "dlsym",
            "mprotect",
            "pthread_create",
            "sigaction",
            "syscall",
            "environ",
            "NULL",
            "size_t",
            "INFINITY",
            "I",
            "errno",
            "stdin",
            "_init",
            "_fini",
            "RTLD_LAZY",
            "FE_TONEAREST",
        ] {
            assert!(symbol_problem(bad).is_some(), "{bad} should be refused");
        }
        for good in [
            "rosenbrock_vjp",
            "f",
            "_private",
            "sin_jvp",
            "floor2",
            "my_memcpy",
            "x0",
            "adjit_dlopen",
            "data",
            "rem",
        ] {
            assert_eq!(symbol_problem(good), None, "{good} should be accepted");
        }
    }
}
