package explorer

import (
	"crypto/hmac"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// maxStatement bounds a PartiQL statement (DynamoDB's own limit is 8 KB).
const maxStatement = 8192

type partiqlData struct {
	Stmt   string
	Limit  int32
	Sizes  []int
	Ran    bool // a SELECT ran: its page is shown
	Table  string
	Grid   grid
	Next   template.URL
	First  template.URL
	Page   bool // not the first page
	Error  string
	Msg    string
	Unsent bool // the statement writes and arrived by GET: not run
}

// isSelect reports whether stmt reads only: a GET runs it (a link, a
// reload or Back runs nothing else).
func isSelect(stmt string) bool {
	s := strings.TrimLeftFunc(stmt, unicode.IsSpace)
	if len(s) < 6 || !strings.EqualFold(s[:6], "select") {
		return false
	}
	return len(s) == 6 || unicode.IsSpace(rune(s[6]))
}

// fromTable finds the table a SELECT reads, for the grid's key columns.
var fromTable = regexp.MustCompile(`(?i)\bFROM\s+"?([A-Za-z0-9_.-]{3,255})"?`)

func (a *Area) partiqlPage(w http.ResponseWriter, r *http.Request) {
	s, ok := a.k.Require(w, r, "operator")
	if !ok {
		return
	}
	q := r.URL.Query()
	d := partiqlData{Stmt: q.Get("stmt"), Limit: pageSize(q.Get("limit")), Sizes: pageSizes, Msg: message(r)}
	status := http.StatusOK
	if f, ok := a.flashes.get(a.k.Now(), s.Subject, q.Get("flash")); ok {
		d.Stmt, d.Error, status = f.Form.Get("stmt"), f.Error, http.StatusBadRequest
		a.k.Render(w, r, status, "partiql", d)
		return
	}
	switch {
	case strings.TrimSpace(d.Stmt) == "":
	case len(d.Stmt) > maxStatement:
		d.Error, status = "The statement is longer than 8 KB.", http.StatusBadRequest
	case !isSelect(d.Stmt):
		d.Unsent = d.Msg == ""
	default:
		in := &dynamodb.ExecuteStatementInput{Statement: aws.String(d.Stmt), Limit: aws.Int32(d.Limit)}
		if n := q.Get("next"); n != "" {
			tok, ok := a.openNextToken(d.Stmt, n)
			if !ok {
				d.Error, status = "This page link is not valid for this statement (edited, or from before a restart of quarry): run the statement again.", http.StatusBadRequest
				break
			}
			in.NextToken, d.Page = aws.String(tok), true
		}
		out, err := a.db.ExecuteStatement(r.Context(), in)
		if err != nil {
			d.Error, status = inputMessage(err), http.StatusBadRequest
			break
		}
		var keys, tableKeys []string
		if m := fromTable.FindStringSubmatch(d.Stmt); m != nil {
			if ti, err := a.describe(r.Context(), m[1], false); err == nil {
				d.Table, keys, tableKeys = ti.Name, ti.KeyNames(), ti.KeyNames()
			}
		}
		d.Ran, d.Grid = true, newGrid(out.Items, keys, tableKeys)
		if t := aws.ToString(out.NextToken); t != "" {
			d.Next = queryLink(q, "next", a.signNextToken(d.Stmt, t))
		}
		if d.Page {
			d.First = queryLink(q, "next", "")
		}
	}
	a.k.Render(w, r, status, "partiql", d)
}

// partiqlRun runs a statement that writes and redirects to the page; a
// SELECT is only redirected, to run by GET.
func (a *Area) partiqlRun(w http.ResponseWriter, r *http.Request) {
	s, ok := a.k.Require(w, r, "operator")
	if !ok {
		return
	}
	stmt, limit := r.PostForm.Get("stmt"), r.PostForm.Get("limit")
	refuse := func(msg string) {
		id := a.flashes.put(a.k.Now(), s.Subject, msg, url.Values{"stmt": {stmt}})
		http.Redirect(w, r, "/console/explorer/partiql?"+url.Values{"flash": {id}}.Encode(), http.StatusSeeOther)
	}
	switch {
	case strings.TrimSpace(stmt) == "":
		refuse("Write a PartiQL statement first, such as SELECT * FROM \"table\" WHERE pk = 'a'.")
		return
	case len(stmt) > maxStatement:
		refuse("The statement is longer than 8 KB.")
		return
	case isSelect(stmt):
		http.Redirect(w, r, "/console/explorer/partiql?"+url.Values{"stmt": {stmt}, "limit": {limit}}.Encode(), http.StatusSeeOther)
		return
	}
	if _, err := a.db.ExecuteStatement(r.Context(), &dynamodb.ExecuteStatementInput{Statement: aws.String(stmt)}); err != nil {
		refuse(inputMessage(err))
		return
	}
	http.Redirect(w, r, "/console/explorer/partiql?"+url.Values{"stmt": {stmt}, "msg": {"ran"}}.Encode(), http.StatusSeeOther)
}

// signNextToken binds the store's NextToken to the statement it pages, so
// a token edited or carried to another statement is refused.
func (a *Area) signNextToken(stmt, tok string) string {
	return tok + "~" + a.mac("partiql\x00"+stmt+"\x00"+tok)
}

// openNextToken returns the store's NextToken of signed for stmt.
func (a *Area) openNextToken(stmt, signed string) (string, bool) {
	i := strings.LastIndexByte(signed, '~')
	if i < 0 {
		return "", false
	}
	tok := signed[:i]
	return tok, hmac.Equal([]byte(signed[i+1:]), []byte(a.mac("partiql\x00"+stmt+"\x00"+tok)))
}
