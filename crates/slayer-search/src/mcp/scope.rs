//! The session's scope (`mcp --project P --agent A`): what a tool call may read and change of
//! the memories. A call's own `project`/`agent` may narrow the scope, never widen it, so a
//! client the server was started for cannot reach another project's or agent's memories by
//! asking.
//!
//! Reading follows search's rule (`slayer_search::scoping::MemoryFilter::owns`): a memory
//! without a project is every project's, one without an agent every agent's. Changing is
//! stricter: a session locked to a project (agent) forgets or replaces only memories of that
//! project (agent), never the shared ones, since those are other sessions' too.

use slayer_common::records::Standing;
use slayer_search::scoping::MemoryFilter;

use super::tool_error::ToolError;

/// The session's project and agent; `None` leaves that side unlocked.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scope {
    /// The project every call is locked to.
    pub project: Option<String>,
    /// The agent every call is locked to.
    pub agent: Option<String>,
}

impl Scope {
    /// The scope of one call that names `project` and `agent` (either may be absent): the
    /// session's, narrowed by the call's; a call naming another project or agent than the
    /// session's is refused.
    pub fn narrow(
        &self,
        project: Option<String>,
        agent: Option<String>,
    ) -> Result<Scope, ToolError> {
        Ok(Scope {
            project: self.side("project", &self.project, project)?,
            agent: self.side("agent", &self.agent, agent)?,
        })
    }

    fn side(
        &self,
        what: &str,
        locked: &Option<String>,
        asked: Option<String>,
    ) -> Result<Option<String>, ToolError> {
        match (locked, asked) {
            (Some(locked), Some(asked)) if *locked != asked => Err(ToolError::OutOfScope {
                what: what.to_owned(),
                asked,
                scope: self.describe(),
            }),
            (Some(locked), _) => Ok(Some(locked.clone())),
            (None, asked) => Ok(asked),
        }
    }

    /// Whether the session may read a memory of this standing (deleted or not).
    pub fn sees(&self, standing: &Standing) -> bool {
        let filter = MemoryFilter {
            project: self.project.clone(),
            agent: self.agent.clone(),
            ..MemoryFilter::default()
        };
        filter.owns(&Standing {
            deleted: false,
            ..standing.clone()
        })
    }

    /// Refuses a change (forget, or a save replacing the id) to a memory the session does
    /// not own: another project's or agent's, or one shared by every project (agent) when
    /// the session is locked to one. A memory the session cannot even see is answered as an
    /// absent one would be (forget), or as a taken id (save), never naming its owner: out of
    /// scope and absent look alike on every surface.
    pub fn may_change(
        &self,
        id: &str,
        standing: &Standing,
        change: Change,
    ) -> Result<(), ToolError> {
        let owned = |locked: &Option<String>, owner: &Option<String>| match locked {
            Some(locked) => owner.as_ref() == Some(locked),
            None => true,
        };
        if owned(&self.project, &standing.project) && owned(&self.agent, &standing.agent) {
            return Ok(());
        }
        if !self.sees(standing) {
            return Err(match change {
                Change::Forget => ToolError::NoMemory(id.to_owned()),
                Change::Replace => ToolError::IdTaken(id.to_owned()),
            });
        }
        let owner = match (&standing.project, &standing.agent) {
            (None, None) => "it is shared by every project and agent".to_owned(),
            (project, agent) => format!(
                "it belongs to {}",
                Scope {
                    project: project.clone(),
                    agent: agent.clone(),
                }
                .describe()
            ),
        };
        Err(ToolError::NotOwned {
            id: id.to_owned(),
            scope: self.describe(),
            owner,
        })
    }

    /// `project 'p', agent 'a'`, or what is left unlocked.
    pub fn describe(&self) -> String {
        let side = |what: &str, value: &Option<String>| match value {
            Some(v) => format!("{what} '{v}'"),
            None => format!("any {what}"),
        };
        format!(
            "{}, {}",
            side("project", &self.project),
            side("agent", &self.agent)
        )
    }
}

/// What a change to a memory is, for [`Scope::may_change`]'s answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// `forget_memory`.
    Forget,
    /// `save_memory` under an id that exists.
    Replace,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(project: Option<&str>, agent: Option<&str>) -> Scope {
        Scope {
            project: project.map(str::to_owned),
            agent: agent.map(str::to_owned),
        }
    }

    #[test]
    fn a_call_narrows_the_scope_and_never_widens_it() {
        let session = scope(Some("shop"), None);
        assert_eq!(session.narrow(None, None).unwrap(), session.clone());
        assert_eq!(
            session
                .narrow(Some("shop".into()), Some("etl".into()))
                .unwrap(),
            scope(Some("shop"), Some("etl"))
        );
        assert_eq!(
            session
                .narrow(Some("ops".into()), None)
                .unwrap_err()
                .to_string(),
            "project 'ops' is outside this session's scope (project 'shop', any agent); \
             a call may narrow the scope, never widen it"
        );
        let locked = scope(Some("shop"), Some("etl"));
        assert!(locked.narrow(None, Some("bi".into())).is_err());
        assert_eq!(
            Scope::default().narrow(Some("x".into()), None).unwrap(),
            scope(Some("x"), None)
        );
    }

    #[test]
    fn a_session_changes_only_its_own_memories() {
        let owned = |p: Option<&str>, a: Option<&str>| Standing {
            project: p.map(str::to_owned),
            agent: a.map(str::to_owned),
            ..Standing::default()
        };
        let session = scope(Some("shop"), Some("etl"));
        assert!(session
            .may_change("1", &owned(Some("shop"), Some("etl")), Change::Forget)
            .is_ok());
        assert!(session.sees(&owned(None, None)));
        let shared = session
            .may_change("2", &owned(None, None), Change::Forget)
            .unwrap_err()
            .to_string();
        assert!(
            shared.contains("shared by every project and agent"),
            "{shared}"
        );
        // Out of scope looks absent (forget) or taken (save), the owner never named.
        let other = session
            .may_change("3", &owned(Some("ops"), None), Change::Forget)
            .unwrap_err()
            .to_string();
        assert_eq!(other, "No memory with id '3'.");
        let taken = session
            .may_change("3", &owned(Some("ops"), None), Change::Replace)
            .unwrap_err()
            .to_string();
        assert!(taken.starts_with("memory id '3' is taken"), "{taken}");
        assert!(!taken.contains("ops"), "{taken}");
        assert!(!session.sees(&owned(Some("ops"), None)));
        let project_only = scope(Some("shop"), None);
        assert!(project_only
            .may_change("4", &owned(Some("shop"), Some("bi")), Change::Forget)
            .is_ok());
        assert!(Scope::default()
            .may_change("5", &owned(Some("ops"), None), Change::Forget)
            .is_ok());
    }
}
