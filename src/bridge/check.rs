//! The start check before connecting (`check_engine`): the engine is started once and must
//! speak its protocol, or it is refused with a message naming the command and quoting what it
//! printed, before it costs a game.

use std::time::Duration;

use tokio::time::Instant;

use super::engine::EXIT_DRAIN;
use super::{BridgeError, ConnectOptions, Engine, EngineNews};
use crate::program::EngineProtocol;

/// How long a sau engine that does not answer `name` must stay up, at the check before
/// connecting, to count as started (one that answers passes at once).
pub const SAU_ALIVE: Duration = Duration::from_secs(1);

/// The check before connecting: starts the engine once and sees that it speaks its protocol
/// (GTP: answers `name`, `protocol_version`, `boardsize 11`; sau: answers `name`, or else stays
/// up for `SAU_ALIVE`; json: says hello within `setup_timeout`). Returns the engine
/// and its name, or an error naming the command and quoting what it printed.
pub async fn check_engine(
    options: &ConnectOptions,
) -> Result<(Engine, Option<String>), BridgeError> {
    let command = options.command.join(" ");
    let refuse = |problem: String, printed: String| BridgeError::EngineCheck {
        command: command.clone(),
        problem,
        printed,
    };
    let mut engine = Engine::start(options, None)
        .map_err(|e| refuse(e.to_string(), "it printed nothing".to_string()))?;
    let started = Instant::now();
    let mut out = Vec::new();
    engine.adapter.on_check(started, &mut out);
    if let Err(fault) = engine.send_lines(std::mem::take(&mut out)) {
        let printed = engine.quoted_output();
        engine.stop().await;
        return Err(refuse(fault.0, printed));
    }
    let sau = options.protocol == EngineProtocol::Sau;
    let answer_by = started + options.setup_timeout;
    let problem = loop {
        if engine.exited_at.is_none() {
            if sau && Instant::now() >= started + SAU_ALIVE {
                break None;
            }
            if engine.adapter.check_answered() {
                break None;
            }
        }
        let wake = if sau { started + SAU_ALIVE } else { answer_by };
        let wake = engine.exited_at.map_or(wake, |t| wake.min(t + EXIT_DRAIN));
        tokio::select! {
            news = engine.next_news(&mut out) => match news {
                Ok(EngineNews::Exited(status)) => {
                    tracing::debug!("engine exited during the check: {status}");
                }
                Ok(_) => {
                    if let Err(fault) = engine.send_lines(std::mem::take(&mut out)) {
                        break Some(fault.0);
                    }
                }
                Err(fault) => break Some(fault.0),
            },
            _ = tokio::time::sleep_until(wake) => {
                if engine.exited_at.is_some() {
                    break Some("the engine exited".to_string());
                }
                if !sau {
                    break Some(format!(
                        "no answer within {} ms (see --setup-timeout-ms)",
                        options.setup_timeout.as_millis()
                    ));
                }
            }
        }
    };
    if let Some(problem) = problem {
        let status = match engine.process.wait_exit_within(EXIT_DRAIN).await {
            Some(status) => format!(" ({status})"),
            None => String::new(),
        };
        let printed = engine.quoted_output();
        engine.stop().await;
        return Err(refuse(format!("{problem}{status}"), printed));
    }
    let name = engine.adapter.engine_name();
    tracing::info!(
        "engine `{command}` passed its start check{}",
        name.as_deref()
            .map(|n| format!(" (it says its name is {n:?})"))
            .unwrap_or_default()
    );
    Ok((engine, name))
}
