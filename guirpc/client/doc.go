// Package client is a BOINC GUI RPC client: it talks to boincd or to the
// C++ BOINC client over TCP (default 127.0.0.1:31416) the way boinccmd and
// the BOINC Manager do.
//
// Framing is BOINC's own: a request is
// "<boinc_gui_rpc_request>\n" + op + "\n</boinc_gui_rpc_request>\n\003" and
// the reply is everything up to the next \003 byte. One connection carries
// many requests, one at a time; a Client serialises its callers.
//
// Replies are parsed with encoding/xml in non-strict mode and the parsers
// accept both boolean spellings BOINC writes (<flag/> and <flag>0|1</flag>),
// so replies from older or newer clients parse as long as their element
// names match. Absolute times are time.Time (zero when BOINC sent 0),
// durations are time.Duration.
package client
