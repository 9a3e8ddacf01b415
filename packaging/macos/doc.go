// Package macos holds boincd's launchd daemon definition
// (org.boincd.boincd.plist) and the test that checks it. It has no code
// of its own.
package macos
