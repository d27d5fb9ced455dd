//! The SQL of an Ossie metric as tokens: words (identifiers, dotted paths, keywords), numbers,
//! strings, parentheses, commas, `*` and operators; and tokens back as text.

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub enum Token {
    Word(String),
    Number(String),
    Text(String),
    Open,
    Close,
    Comma,
    Star,
    Op(String),
}

/// SQL this tokenizer does not read.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("'{0}' is not SQL this importer reads")]
    NotSql(char),
    #[error("unbalanced parentheses")]
    Unbalanced,
}

pub fn tokens(sql: &str) -> Result<Vec<Token>, TokenError> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' || c == '"' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | '.' | '"'))
            {
                i += 1;
            }
            out.push(Token::Word(
                chars[start..i].iter().collect::<String>().replace('"', ""),
            ));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            out.push(Token::Number(chars[start..i].iter().collect()));
        } else if c == '\'' {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push(Token::Text(
                chars[start..i.min(chars.len())].iter().collect(),
            ));
        } else {
            i += 1;
            out.push(match c {
                '(' => Token::Open,
                ')' => Token::Close,
                ',' => Token::Comma,
                '*' => Token::Star,
                '+' | '-' | '/' | '%' => Token::Op(c.to_string()),
                '<' | '>' | '=' | '!' => {
                    let mut op = c.to_string();
                    if i < chars.len() && matches!(chars[i], '=' | '>') {
                        op.push(chars[i]);
                        i += 1;
                    }
                    Token::Op(op)
                }
                other => return Err(TokenError::NotSql(other)),
            });
        }
    }
    Ok(out)
}

/// The token index just past the parenthesis closing the one at `open`.
pub fn closing(t: &[Token], open: usize) -> Result<usize, TokenError> {
    let mut depth = 0;
    for (i, tok) in t.iter().enumerate().skip(open) {
        match tok {
            Token::Open => depth += 1,
            Token::Close => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i + 1);
                }
            }
            _ => {}
        }
    }
    Err(TokenError::Unbalanced)
}

pub fn text_of(t: &[Token]) -> String {
    let mut out = String::new();
    for tok in t {
        let piece = match tok {
            Token::Word(w) | Token::Number(w) | Token::Text(w) | Token::Op(w) => w.clone(),
            Token::Open => "(".into(),
            Token::Close => ")".into(),
            Token::Comma => ",".into(),
            Token::Star => "*".into(),
        };
        let glue = matches!(tok, Token::Close | Token::Comma | Token::Open)
            || out.ends_with('(')
            || out.is_empty();
        if !glue {
            out.push(' ');
        }
        out.push_str(&piece);
    }
    out
}
