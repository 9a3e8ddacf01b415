package winsvc

import (
	"strings"
	"testing"
)

func TestParseAccount(t *testing.T) {
	tests := []struct {
		user    string
		want    Account
		wantErr string
	}{
		{"", Account{Kind: Virtual, StartName: `NT SERVICE\boincd`}, ""},
		{`NT SERVICE\boincd`, Account{Kind: Virtual, StartName: `NT SERVICE\boincd`}, ""},
		{`nt service\BOINCD`, Account{Kind: Virtual, StartName: `NT SERVICE\boincd`}, ""},
		{"LocalSystem", Account{Kind: LocalSystem, StartName: "LocalSystem"}, ""},
		{`NT AUTHORITY\SYSTEM`, Account{Kind: LocalSystem, StartName: "LocalSystem"}, ""},
		{"localservice", Account{Kind: LocalService, StartName: `NT AUTHORITY\LocalService`}, ""},
		{`NT AUTHORITY\Local Service`, Account{Kind: LocalService, StartName: `NT AUTHORITY\LocalService`}, ""},
		{"NetworkService", Account{Kind: NetworkService, StartName: `NT AUTHORITY\NetworkService`}, ""},
		{"alice", Account{Kind: User, StartName: `.\alice`, NeedsPassword: true}, ""},
		{` .\alice `, Account{Kind: User, StartName: `.\alice`, NeedsPassword: true}, ""},
		{`CORP\bob`, Account{Kind: User, StartName: `CORP\bob`, NeedsPassword: true}, ""},
		{`bob@corp.example`, Account{Kind: User, StartName: `bob@corp.example`, NeedsPassword: true}, ""},
		{`Jane Doe`, Account{Kind: User, StartName: `.\Jane Doe`, NeedsPassword: true}, ""},
		{`NT SERVICE\other`, Account{}, "virtual account must be"},
		{`NT AUTHORITY\IUSR`, Account{}, "NT AUTHORITY"},
		{`.\`, Account{}, "empty name"},
		{`\alice`, Account{}, "domain: empty name"},
		{`a\b\c`, Account{}, `contains '\\'`},
		{`al*ce`, Account{}, `contains '*'`},
		{`..`, Account{}, "only dots"},
		{"bad\x01name", Account{}, "control character"},
		{`CORP\bob@x`, Account{}, "@ is only allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			got, err := ParseAccount(tt.user, Name)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseAccount(%q) = %+v, %v; want error containing %q", tt.user, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseAccount(%q) = %+v, %v; want %+v", tt.user, got, err, tt.want)
			}
		})
	}
}

func TestServiceSID(t *testing.T) {
	tests := []struct{ name, want string }{
		// "sc showsid TrustedInstaller", a SID every Windows has.
		{"TrustedInstaller", "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"},
		// Service names are case-insensitive, and so is the SID.
		{"trustedinstaller", "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"},
	}
	for _, tt := range tests {
		if got := ServiceSID(tt.name); got != tt.want {
			t.Errorf("ServiceSID(%q) = %s, want %s", tt.name, got, tt.want)
		}
	}
	if !validSID(ServiceSID(Name)) {
		t.Errorf("ServiceSID(%q) = %s is not a valid SID", Name, ServiceSID(Name))
	}
}

func TestDataDirSDDL(t *testing.T) {
	got, err := DataDirSDDL(ServiceSID("TrustedInstaller"), "S-1-5-21-1-2-3-1001")
	if err != nil {
		t.Fatal(err)
	}
	want := "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)" +
		"(A;OICI;FA;;;S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464)" +
		"(A;OICI;FA;;;S-1-5-21-1-2-3-1001)"
	if got != want {
		t.Fatalf("DataDirSDDL = %s\nwant %s", got, want)
	}
	for _, bad := range []string{"", "S-1", "S-1-5-x", "S-2-5-18", "S-1-5-18)(A;;FA;;;WD", "S-1-5--1", "WD"} {
		if _, err := DataDirSDDL(bad); err == nil {
			t.Errorf("DataDirSDDL(%q) accepted", bad)
		}
	}
}

func TestLookupName(t *testing.T) {
	tests := []struct {
		user, computer, want string
	}{
		{"alice", "PC1", `PC1\alice`},
		{`.\alice`, "PC1", `PC1\alice`},
		{`CORP\bob`, "PC1", `CORP\bob`},
		{`bob@corp.example`, "PC1", `bob@corp.example`},
		{"alice", "", `.\alice`},
	}
	for _, tt := range tests {
		a, err := ParseAccount(tt.user, Name)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.LookupName(tt.computer); got != tt.want {
			t.Errorf("LookupName(%q, %q) = %q, want %q", tt.user, tt.computer, got, tt.want)
		}
	}
}
