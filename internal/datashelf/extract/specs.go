package extract

import "strings"

// SpecKeys are the normalised specification keys, in display order.
var SpecKeys = []string{"author", "isbn", "publisher", "pages", "language", "format", "publication_date", "dimensions", "weight", "condition", "edition"}

// specSynonyms maps a key folded by foldKey to its normalised key.
var specSynonyms = map[string]string{
	"author": "author", "authors": "author", "author s": "author", "written by": "author", "by": "author",
	"isbn": "isbn", "isbn 13": "isbn", "isbn13": "isbn", "ean": "isbn", "isbn ean": "isbn",
	"publisher": "publisher", "publisher name": "publisher", "published by": "publisher", "imprint": "publisher",
	"pages": "pages", "number of pages": "pages", "no of pages": "pages", "page count": "pages", "num pages": "pages", "pagecount": "pages",
	"language": "language", "lang": "language", "languages": "language",
	"format": "format", "binding": "format", "binding type": "format", "bindingtype": "format", "book format": "format",
	"publication date": "publication_date", "date published": "publication_date", "published": "publication_date", "pub date": "publication_date",
	"release date": "publication_date", "published date": "publication_date", "date of publication": "publication_date", "datepublished": "publication_date",
	"dimensions": "dimensions", "dimension": "dimensions", "size": "dimensions", "product dimensions": "dimensions",
	"weight": "weight", "item weight": "weight", "shipping weight": "weight",
	"condition": "condition", "book condition": "condition", "item condition": "condition",
	"edition": "edition", "edition number": "edition", "edition statement": "edition",
}

// foldKey lowercases k and turns runs of non-alphanumerics into one space.
func foldKey(k string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(k) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127 && r != '\u00a0' {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		} else {
			space = true
		}
	}
	return b.String()
}

// NormalizeSpecKey maps a displayed specification key ("Publication Date",
// "No. of pages:", "ISBN-13", "Binding") to its normalised key
// ("publication_date", "pages", "isbn", "format"). known is false for keys
// outside SpecKeys; the returned key is then the folded key in snake case.
func NormalizeSpecKey(k string) (key string, known bool) {
	f := foldKey(k)
	if n, ok := specSynonyms[f]; ok {
		return n, true
	}
	return strings.ReplaceAll(f, " ", "_"), false
}

// setSpec stores a key/value pair into p.Specs or p.Extra; the first value
// of a key wins.
func (p *ProductPage) setSpec(k, v string) {
	k, v = strings.TrimSpace(k), clean(v)
	if k == "" || v == "" {
		return
	}
	key, known := NormalizeSpecKey(k)
	if key == "" {
		return
	}
	if !known {
		if p.Extra == nil {
			p.Extra = map[string]string{}
		}
		if _, dup := p.Extra[key]; !dup {
			p.Extra[key] = v
		}
		return
	}
	if key == "isbn" {
		d := digits(v)
		if len(d) != 13 && len(d) != 10 {
			return
		}
		v = d
	}
	if _, dup := p.Specs[key]; !dup {
		p.Specs[key] = v
	}
}
