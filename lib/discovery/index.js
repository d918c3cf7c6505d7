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

// listing.js and what only it needs (extract.js, session-info.js, progress.js) load on the first
// list/listAll: opening a session by its path, pi's most common first call, never lists.
let listing;
const listingModule = () => {
  listing ??= require("./listing.js");
  return listing;
};
function list(cwd, sessionDir, onProgress, signal) {
  return listingModule().list(cwd, sessionDir, onProgress, signal);
}
function listAll(sessionDirOrOnProgress, onProgressOrSignal, signal) {
  return listingModule().listAll(sessionDirOrOnProgress, onProgressOrSignal, signal);
}

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
