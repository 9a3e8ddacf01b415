// Package nomad holds boincd's Nomad job (boincd.nomad.hcl: a system job
// running the container image with the docker driver) and the tests that
// validate it. It has no code of its own.
//
// The tests parse the job with hashicorp/hcl and decode it strictly into Go
// structs that mirror the subset of the Nomad jobspec the job uses (an
// attribute or block outside that subset is an error), check the settings
// that matter for a volunteer-computing client, and render the config
// template (with a stub nomadVar) and load it with package config.
package nomad
