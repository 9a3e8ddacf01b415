package realserver

// apiFeatureCases are the feature cases whose app is linked with the BOINC
// API (trickle messages; an app version without <api_version>).
func apiFeatureCases() []featureCase {
	return nil
}
