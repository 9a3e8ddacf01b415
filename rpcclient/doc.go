// Package rpcclient is the BOINC project-server protocol client: it writes
// scheduler requests byte-compatible with the C++ client 7.20, parses
// scheduler replies into boinc domain values, discovers scheduler URLs from
// a project's master page, and downloads and uploads files (the
// file_upload_handler protocol) over go-retryablehttp.
//
// Nothing here touches client state: parsing returns plain values and the
// transfer functions work on paths the caller chooses, so the daemon decides
// what a reply or a failure means for its projects and results.
package rpcclient
