package config

import (
	"fmt"
	"os"
	"strings"
)

// DataShelf is the configuration of the bookshop crawler and catalogue.
type DataShelf struct {
	// DB selects DataShelf's database: empty for SQLite under the data
	// directory, or a postgres:// URL.
	DB string
	// Keys is a file of "KEY_ID SECRET" lines for DataShelf's HMAC-signed
	// scraper endpoints.
	Keys string
}

func (d *DataShelf) fields() []field {
	return group(GroupDataShelf, []field{
		{flag: "datashelf-db", usage: "DataShelf database: empty for SQLite under data-dir, or a postgres:// URL", str: &d.DB},
		{flag: "datashelf-keys", usage: "file of \"KEY_ID SECRET\" lines for DataShelf's signed scraper endpoints", str: &d.Keys},
	})
}

func (d *DataShelf) validate() []error {
	var errs []error
	if d.DB != "" && !strings.HasPrefix(d.DB, "postgres://") && !strings.HasPrefix(d.DB, "postgresql://") {
		errs = append(errs, fmt.Errorf("config: --datashelf-db %q: want empty (SQLite) or a postgres:// URL", d.DB))
	}
	if d.Keys != "" {
		if st, err := os.Stat(d.Keys); err != nil || st.IsDir() {
			errs = append(errs, fmt.Errorf("config: --datashelf-keys %q: not a readable file", d.Keys))
		}
	}
	return errs
}
