//! The text format: a parser with located errors and a printer that writes a canonical form
//! which parses back to the identical function (floats bit-exact).

mod lexer;
mod names;
mod parse;
mod print;

pub use lexer::{escape_invisible, parse_literal, source_lines, LiteralError};
pub use parse::{
    decode_source, parse, parse_function, parse_with_source, ParseError, ParseErrors, SourceMap,
};
pub use print::{
    format_literal, inst_to_string, inst_to_string_with_names, printed_names, value_to_string,
};
