package sim

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strings"
)

// The scenarios in sim/scenarios/ ship inside the binary, so the policy
// study's before/after suite (and anyone's `boincd-sim`) does not
// depend on the working directory.
//
//go:embed scenarios/*.toml
var builtin embed.FS

// BuiltinScenarios lists the embedded scenarios by name (file name
// without .toml).
func BuiltinScenarios() []string {
	ents, _ := builtin.ReadDir("scenarios")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".toml"))
	}
	sort.Strings(names)
	return names
}

// BuiltinScenario parses an embedded scenario by name.
func BuiltinScenario(name string) (*Scenario, error) {
	data, err := BuiltinScenarioTOML(name)
	if err != nil {
		return nil, err
	}
	return ParseScenario("sim/"+path.Join("scenarios", name+".toml"), data)
}

// BuiltinScenarioTOML is an embedded scenario's file, as committed.
func BuiltinScenarioTOML(name string) ([]byte, error) {
	data, err := builtin.ReadFile(path.Join("scenarios", name+".toml"))
	if err != nil {
		return nil, fmt.Errorf("no built-in scenario %q: want one of %s", name, strings.Join(BuiltinScenarios(), ", "))
	}
	return data, nil
}
