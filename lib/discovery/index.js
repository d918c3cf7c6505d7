"use strict";
// Session discovery with the reference's exact results (pi-coding-agent session-manager.js:
// readSessionHeader, findMostRecentSession, buildSessionInfo, listSessionsFromDir,
// SessionManager.list / listAll / findById / continueRecent), by job:
// - headers.js: readSessionHeader (the scan itself is Rust's) and its tolerant forms
// - lookups.js: findMostRecentSession / continueRecent, findById
// - listing.js: list / listAll; extract.js: the native pass and its memo;
//   session-info.js: records -> SessionInfos with lazy texts; progress.js: the throttle
// - dirs.js: which directory, which cwd
const { SessionHeaderScanLimitError, readSessionHeader, readSessionHeaderForOpen } = require("./headers.js");
const { findMostRecentSession, continueRecentPath, findById } = require("./lookups.js");
const { list, listAll } = require("./listing.js");

module.exports = {
  SessionHeaderScanLimitError,
  readSessionHeader,
  readSessionHeaderForOpen,
  findMostRecentSession,
  continueRecentPath,
  findById,
  list,
  listAll,
};
