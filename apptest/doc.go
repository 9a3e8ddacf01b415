// Package apptest proves that boincd drives real BOINC-API science apps.
package apptest
