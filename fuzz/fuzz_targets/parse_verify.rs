//! Arbitrary bytes → text (lossy UTF-8) → parse → verify every function → print → reparse.
//! Nothing may panic, and every function that verifies must print to text that parses back
//! to the identical function, printing being a fixpoint.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(funcs) = adjit_ir::parse(&text) else {
        return;
    };
    for func in &funcs {
        let printed = func.to_string();
        if adjit_ir::verify(func).is_err() {
            let _ = adjit_ir::parse(&printed);
            continue;
        }
        let again = adjit_ir::parse_function(&printed)
            .unwrap_or_else(|e| panic!("a verified function did not reparse:\n{e}\n{printed}"));
        assert_eq!(func, &again, "round trip changed the function:\n{printed}");
        assert_eq!(printed, again.to_string(), "printing is not a fixpoint");
    }
});
