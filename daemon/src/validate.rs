//! Input that breaks a rule is refused with the field's name and the rule,
//! before anything is changed. Every module reports bad input this way, and
//! the API turns it into `400 {"error", "field"}`.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {rule}")]
pub struct Invalid {
    pub field: String,
    pub rule: String,
}

impl Invalid {
    pub fn new(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            rule: rule.into(),
        }
    }
}

/// A required text field: present and not blank.
pub fn required<'a>(field: &str, value: &'a str) -> Result<&'a str, Invalid> {
    if value.trim().is_empty() {
        Err(Invalid::new(field, "is required"))
    } else {
        Ok(value)
    }
}
