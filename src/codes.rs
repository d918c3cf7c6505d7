//! The codes that cross the boundary, defined once here as `#[napi]` enums and constants:
//! napi-rs exports each enum as a frozen JS object (`native.FieldKind.Message`) and types it
//! in binding.d.ts, and the JS layer reads them from the binding instead of keeping copies.
//! Numeric, not string enums: they travel in typed arrays (`appendFieldsBatch`, `linesText`'s
//! `shells`) and are compared on every append.

use napi_derive::napi;
use pi_session_core::entry::{EntryType, Role};
use pi_session_core::materialize;
use pi_session_core::shape_stream;

/// The entry types `appendFields` takes with their index fields given (type, id, parentId
/// and role are all their index holds), so Rust does not scan their text.
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Message = 0,
    Custom = 1,
    SessionInfo = 2,
    ThinkingLevelChange = 3,
    ModelChange = 4,
    CustomMessage = 5,
    Usage = 6,
}

/// Every [`FieldKind`], at the index of its value (a batch's `Uint8Array` codes index it).
const FIELD_KINDS: [FieldKind; 7] = [
    FieldKind::Message,
    FieldKind::Custom,
    FieldKind::SessionInfo,
    FieldKind::ThinkingLevelChange,
    FieldKind::ModelChange,
    FieldKind::CustomMessage,
    FieldKind::Usage,
];

impl FieldKind {
    /// The kind of a code from a typed array, if it is one.
    pub fn from_code(code: u8) -> Option<FieldKind> {
        FIELD_KINDS.get(usize::from(code)).copied()
    }

    pub fn entry_type(self) -> EntryType {
        match self {
            FieldKind::Message => EntryType::Message,
            FieldKind::Custom => EntryType::Custom,
            FieldKind::SessionInfo => EntryType::SessionInfo,
            FieldKind::ThinkingLevelChange => EntryType::ThinkingLevelChange,
            FieldKind::ModelChange => EntryType::ModelChange,
            FieldKind::CustomMessage => EntryType::CustomMessage,
            FieldKind::Usage => EntryType::Usage,
        }
    }
}

/// A message's role as `appendFields` takes it (read only for `FieldKind.Message`).
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldRole {
    User = 0,
    Assistant = 1,
    ToolResult = 2,
    System = 3,
    /// Any other role, or none.
    Other = 4,
}

/// Every [`FieldRole`], at the index of its value.
const FIELD_ROLES: [FieldRole; 5] = [
    FieldRole::User,
    FieldRole::Assistant,
    FieldRole::ToolResult,
    FieldRole::System,
    FieldRole::Other,
];

impl FieldRole {
    /// The role of a code from a typed array, if it is one.
    pub fn from_code(code: u8) -> Option<FieldRole> {
        FIELD_ROLES.get(usize::from(code)).copied()
    }

    /// The role Rust's index gives an entry of `kind` (only messages have one).
    pub fn role_of(self, kind: FieldKind) -> Role {
        match (kind, self) {
            (FieldKind::Message, FieldRole::User) => Role::User,
            (FieldKind::Message, FieldRole::Assistant) => Role::Assistant,
            (FieldKind::Message, FieldRole::ToolResult) => Role::ToolResult,
            (FieldKind::Message, FieldRole::System) => Role::System,
            _ => Role::Other,
        }
    }
}

/// `appendFieldsBatch`'s parent codes besides an index into `parentKeys` (0 and up).
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchParent {
    /// `parentId: null`.
    Null = -1,
    /// The id of the entry before it in the batch.
    Previous = -2,
}

/// What `linesText` hands over for an entry: its `form` argument (what to give for entries
/// that have a shell) and, per entry, its `shells` flag (what its text is).
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextForm {
    /// The whole JSON text.
    Whole = 0,
    /// Its shell (heavy values left out).
    Shell = 1,
    /// The values its shell left out, as a JSON array.
    Values = 2,
}

// The flags are the core's (`materialize::Batch::shells`): the same numbers, checked here.
const _: () = assert!(TextForm::Whole as u8 == materialize::WHOLE);
const _: () = assert!(TextForm::Shell as u8 == materialize::SHELL);
const _: () = assert!(TextForm::Values as u8 == materialize::VALUES);

impl TextForm {
    pub fn form(self) -> materialize::Form {
        match self {
            TextForm::Whole => materialize::Form::Whole,
            TextForm::Shell => materialize::Form::Shells,
            TextForm::Values => materialize::Form::Values,
        }
    }
}

/// What `branchInto` did.
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Branched {
    /// The entries are now the branched session's.
    Done = 1,
    /// A line on the path does not qualify: the caller takes the object route; nothing
    /// changed.
    ObjectRoute = 0,
    /// The path is empty (`Entry <id> not found`); nothing changed.
    NotFound = -1,
}

/// The reply of `appendNew` / `appendFields` when the id is taken (nothing appended); any
/// other reply is the new entry's index.
/// `contextPlan().edits[k]` for a selected entry with no `context_edit`.
#[napi]
pub const NO_EDIT: i32 = -1;

#[napi]
pub const ID_TAKEN: i32 = -1;

/// The reply of `appendFieldsBatch` when its `\n`-joined ids do not split into one per entry
/// (nothing appended; the caller sends them as an array).
#[napi]
pub const IDS_NOT_SPLIT: i32 = -1;

/// `linesText`'s `starts`/`ends` value for an entry whose text could not be read.
#[napi]
pub const UNREADABLE: u32 = materialize::UNREADABLE;

/// `shapesText().forms[k]` of an entry built from a shape (the other forms are `TextForm`s).
#[napi]
pub const SHAPED: u8 = shape_stream::SHAPED;

/// `shapesText().forms[k]` of an entry whose text could not be read.
#[napi]
pub const UNREAD: u8 = shape_stream::UNREAD;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_indexed_by_value() {
        for (i, k) in FIELD_KINDS.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
        for (i, r) in FIELD_ROLES.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        assert_eq!(FieldKind::from_code(7), None);
        assert_eq!(FieldRole::from_code(5), None);
    }
}
