exports.cases = [
  ["slug_simple", "slugify", ["Hello World"], "hello-world"],
  ["slug_trim", "slugify", ["  padded  "], "padded"],
  ["slug_symbols", "slugify", ["a & b!"], "a-b"],
  ["slug_repeat", "slugify", ["a   b"], "a-b"],
  ["slug_empty", "slugify", [""], ""],
  ["slug_digits", "slugify", ["Route 66"], "route-66"],
  ["cap_word", "capitalize", ["word"], "Word"],
  ["cap_empty", "capitalize", [""], ""],
  ["cap_upper", "capitalize", ["ALREADY"], "ALREADY"],
  ["trunc_short", "truncate", ["abc", 5], "abc"],
  ["trunc_long", "truncate", ["abcdefgh", 5], "ab..."],
  ["trunc_exact", "truncate", ["abcde", 5], "abcde"],
];
