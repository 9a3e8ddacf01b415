module github.com/boincd/boincd

go 1.26.8

require (
	github.com/BurntSushi/toml v1.4.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.7 // indirect
	github.com/shirou/gopsutil/v3 v3.24.5 // indirect
	go.etcd.io/bbolt v1.4.0 // indirect
	golang.org/x/sys v0.29.0 // indirect
)
