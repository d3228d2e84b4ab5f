package eecar

import (
	"html/template"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/quarrydb/quarry/internal/console"
)

// Lang is the language of the EECAR pages: "ko" or "en". Templates call
// its methods: {{$L.T "key"}}, {{$L.KRW .Price}}.
type Lang string

// langCookie keeps the language chosen with the switch.
const langCookie = "quarry_lang"

// lang is the request's language: the switch's cookie, else the first
// of Korean or English in Accept-Language (by q), else English.
func lang(r *http.Request) Lang {
	if ck, err := r.Cookie(langCookie); err == nil && (ck.Value == "ko" || ck.Value == "en") {
		return Lang(ck.Value)
	}
	return acceptLang(r.Header.Get("Accept-Language"))
}

// acceptLang picks ko or en from an Accept-Language header.
func acceptLang(h string) Lang {
	best, bestQ := Lang("en"), -1.0
	for _, part := range strings.Split(h, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		base, _, _ := strings.Cut(strings.ToLower(tag), "-")
		if (base == "ko" || base == "en") && q > bestQ {
			best, bestQ = Lang(base), q
		}
	}
	return best
}

func (a *Area) setLang(w http.ResponseWriter, r *http.Request) {
	if _, ok := a.k.Require(w, r, "eecar"); !ok {
		return
	}
	l := r.PostForm.Get("lang")
	if l != "ko" && l != "en" {
		l = "en"
	}
	console.SetCookie(w, r, langCookie, l, 365*24*3600)
	back := console.SafeNext(r.PostForm.Get("back"))
	if !strings.HasPrefix(back, "/console/eecar/") {
		back = "/console/eecar/"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// T is the text of key in l (the key itself when missing, so that a
// missing text shows, and a test sees it).
func (l Lang) T(key string) string {
	if m, ok := texts[key]; ok {
		if l == "ko" {
			return m[1]
		}
		return m[0]
	}
	return key
}

// Other is the language the switch offers.
func (l Lang) Other() Lang {
	if l == "ko" {
		return "en"
	}
	return "ko"
}

// msg is the text of a flash message code from a redirect ("" none).
func (l Lang) msg(code string) string {
	if code == "" {
		return ""
	}
	if _, ok := texts["m."+code]; !ok {
		return ""
	}
	return l.T("m." + code)
}

// KRW formats a price in won: "₩12,500,000"; Korean pages add the
// amount in 만 and 억 units, as Korean listings read it: "₩12,500,000
// (1,250만 원)".
func (l Lang) KRW(v float64) string {
	s := "₩" + group(int64(math.Round(v)))
	if l == "ko" && v >= 10000 {
		s += " (" + Manwon(v) + ")"
	}
	return s
}

// Manwon writes a won amount in 억 and 만 units: 12,500,000 →
// "1,250만 원"; 125,000,000 → "1억 2,500만 원"; 8,000 → "8,000원".
// Amounts under 10,000 won keep their units.
func Manwon(v float64) string {
	n := int64(math.Round(v))
	if n < 10000 {
		return group(n) + "원"
	}
	eok, man, won := n/100000000, n%100000000/10000, n%10000
	var parts []string
	if eok > 0 {
		parts = append(parts, group(eok)+"억")
	}
	if man > 0 {
		parts = append(parts, group(man)+"만")
	}
	if won > 0 {
		parts = append(parts, group(won))
	}
	return strings.Join(parts, " ") + " 원"
}

// group writes n with thousands separators.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Num writes a number with thousands separators and at most two decimals.
func (l Lang) Num(v float64) string {
	if v == math.Trunc(v) {
		return group(int64(v))
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Pct writes a score in [0, 1] as a percentage.
func (l Lang) Pct(v float64) string { return strconv.Itoa(int(math.Round(v*100))) + " %" }

// Time writes an RFC 3339 time as local-looking minutes (UTC).
func (l Lang) Time(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	if l == "ko" {
		return t.UTC().Format("2006. 1. 2. 15:04") + " UTC"
	}
	return t.UTC().Format("2 Jan 2006 15:04") + " UTC"
}

// Ago writes an RFC 3339 time relative to now ("5 min ago", "5분 전"),
// in a <time> element whose hover title is Time's absolute UTC form.
// Times more than 30 days away, and strings that are not times, are
// written as Time writes them.
func (l Lang) Ago(s string, now time.Time) template.HTML {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return template.HTML(template.HTMLEscapeString(s))
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var n int
	var unit string
	switch {
	case d < 45*time.Second:
		unit = "now"
	case d < 59*time.Minute+30*time.Second:
		n, unit = max(1, int((d+30*time.Second)/time.Minute)), "min"
	case d < 23*time.Hour+30*time.Minute:
		n, unit = int((d+30*time.Minute)/time.Hour), "h"
	case d < 30*24*time.Hour:
		n, unit = int((d+12*time.Hour)/(24*time.Hour)), "d"
	default:
		return template.HTML(template.HTMLEscapeString(l.Time(s)))
	}
	var rel string
	switch {
	case unit == "now":
		rel = l.T("ago.now")
	case l == "ko":
		rel = strconv.Itoa(n) + map[string]string{"min": "분", "h": "시간", "d": "일"}[unit]
		if future {
			rel += " 후"
		} else {
			rel += " 전"
		}
	default:
		rel = strconv.Itoa(n) + map[string]string{"min": " min", "h": " h", "d": " days"}[unit]
		if unit == "d" && n == 1 {
			rel = "1 day"
		}
		if future {
			rel = "in " + rel
		} else {
			rel += " ago"
		}
	}
	return template.HTML(`<time datetime="` + template.HTMLEscapeString(t.UTC().Format(time.RFC3339)) + `" title="` +
		template.HTMLEscapeString(l.Time(s)) + `">` + template.HTMLEscapeString(rel) + `</time>`)
}

// Word translates a stored word (a category, condition, status, priority,
// action, recommendation or notification type): its "w." text, else the
// word itself.
func (l Lang) Word(w string) string {
	if _, ok := texts["w."+w]; ok {
		return l.T("w." + w)
	}
	return w
}

// texts are the EECAR pages' texts: key → English, Korean.
var texts = map[string][2]string{
	"eecar":                  {"EECAR", "EECAR"},
	"nav.search":             {"Search", "부품 검색"},
	"nav.my":                 {"My parts", "내 부품"},
	"nav.needs":              {"Needs", "수요"},
	"nav.watches":            {"Watches", "관심 알림"},
	"nav.proposals":          {"Proposals", "제안"},
	"nav.notes":              {"Notifications", "알림"},
	"lang.switch":            {"한국어", "English"},
	"ago.now":                {"just now", "방금"},
	"search.title":           {"Search parts", "부품 검색"},
	"search.q":               {"What are you looking for? (Korean or English)", "찾는 부품 (한국어 또는 영어)"},
	"search.go":              {"Search", "검색"},
	"search.none":            {"No part matches.", "조건에 맞는 부품이 없습니다."},
	"search.hint":            {"Type a part, a use or a spec: “ESS용 중고 배터리 팩”, “11kW on-board charger”, “SOH 90% 이상”.", "부품, 용도, 사양으로 검색하세요: “ESS용 중고 배터리 팩”, “11kW on-board charger”, “SOH 90% 이상”."},
	"why":                    {"Why it matches", "일치 이유"},
	"score":                  {"Score", "점수"},
	"any":                    {"any", "전체"},
	"f.category":             {"Category", "분류"},
	"f.manufacturer":         {"Manufacturer", "제조사"},
	"f.minprice":             {"Price from (₩)", "최저 가격 (₩)"},
	"f.maxprice":             {"Price up to (₩)", "최고 가격 (₩)"},
	"f.condition":            {"Condition", "상태"},
	"f.minsoh":               {"Minimum SOH (%)", "최소 SOH (%)"},
	"f.cathode":              {"Cathode", "양극재"},
	"f.name":                 {"Name", "부품명"},
	"f.model":                {"Model", "모델"},
	"f.year":                 {"Year", "연식"},
	"f.price":                {"Price (₩)", "가격 (₩)"},
	"f.quantity":             {"Quantity", "수량"},
	"f.description":          {"Description", "설명"},
	"f.soh":                  {"State of health, SOH (%)", "배터리 건강 상태 SOH (%)"},
	"f.cathode2":             {"Cathode chemistry (NCM811, LFP…)", "양극재 (NCM811, LFP…)"},
	"f.voltage":              {"Voltage (V)", "전압 (V)"},
	"f.capacity":             {"Capacity (kWh)", "용량 (kWh)"},
	"f.power":                {"Power (kW)", "출력 (kW)"},
	"f.specs":                {"Other specs (JSON)", "기타 사양 (JSON)"},
	"f.images":               {"Images", "이미지"},
	"f.upload":               {"Add images (PNG, JPEG, GIF, WebP; 5 MB each)", "이미지 추가 (PNG, JPEG, GIF, WebP, 각 5MB 이하)"},
	"f.remove":               {"remove", "삭제"},
	"f.industry":             {"Industry", "산업"},
	"f.minqty":               {"Minimum quantity", "최소 수량"},
	"f.materials":            {"Material preferences (comma-separated)", "선호 소재 (쉼표로 구분)"},
	"f.target":               {"Target application", "적용 용도"},
	"f.process":              {"Production process", "생산 공정"},
	"f.priority":             {"Priority", "우선순위"},
	"f.keywords":             {"Keywords (comma-separated)", "키워드 (쉼표로 구분)"},
	"f.type":                 {"Proposal type", "제안 유형"},
	"f.offer":                {"Price offer (₩)", "제안 가격 (₩)"},
	"f.message":              {"Message", "메시지"},
	"err.number":             {"%s must be a number", "%s 항목은 숫자여야 합니다"},
	"err.integer":            {"%s must be a whole number", "%s 항목은 정수여야 합니다"},
	"err.specs":              {"Other specs must be a JSON object", "기타 사양은 JSON 객체여야 합니다"},
	"part.seller":            {"Seller", "판매사"},
	"part.specs":             {"Specs", "사양"},
	"part.health":            {"Battery health", "배터리 상태"},
	"part.soh":               {"State of health", "건강 상태 (SOH)"},
	"part.estimated":         {"estimated from the year", "연식으로 추정"},
	"part.stated":            {"stated by the seller", "판매사 기재"},
	"part.rec":               {"Recommendation", "권장 용도"},
	"part.apps":              {"Suitable for", "적합 용도"},
	"part.uses":              {"Use cases", "활용 사례"},
	"part.edit":              {"Edit", "수정"},
	"part.mine":              {"This is your part.", "내가 등록한 부품입니다."},
	"part.added":             {"Listed", "등록일"},
	"part.noimage":           {"no image", "이미지 없음"},
	"withdraw":               {"Withdraw", "등록 철회"},
	"withdraw.title":         {"Withdraw this part?", "이 부품의 등록을 철회할까요?"},
	"withdraw.confirm":       {"The part “%s” will be removed from the marketplace.", "“%s” 부품이 마켓에서 삭제됩니다."},
	"my.title":               {"My parts", "내 부품"},
	"my.new":                 {"List a part", "부품 등록"},
	"my.none":                {"You have not listed any part yet.", "아직 등록한 부품이 없습니다."},
	"my.edit":                {"Edit part", "부품 수정"},
	"save":                   {"Save", "저장"},
	"next":                   {"Next page", "다음 페이지"},
	"prev":                   {"Previous", "이전"},
	"first":                  {"First page", "첫 페이지"},
	"needs.title":            {"Needs", "수요"},
	"needs.new":              {"Post a need", "수요 등록"},
	"needs.none":             {"No needs yet.", "등록한 수요가 없습니다."},
	"needs.matches":          {"Matching parts", "일치하는 부품"},
	"needs.create":           {"Post need", "수요 등록"},
	"watches.title":          {"Watches", "관심 알림"},
	"watches.new":            {"Watch for parts", "관심 알림 만들기"},
	"watches.none":           {"No watches yet.", "관심 알림이 없습니다."},
	"watches.create":         {"Create watch", "알림 만들기"},
	"watches.found":          {"What it found", "찾은 부품"},
	"watches.nothing":        {"Nothing yet: you are notified when a part that meets it is listed.", "아직 없습니다. 조건에 맞는 부품이 등록되면 알려 드립니다."},
	"watches.cancel":         {"Cancel watch", "알림 해제"},
	"watches.criteria":       {"Criteria", "조건"},
	"watches.last":           {"Last triggered", "최근 알림"},
	"prop.title":             {"Proposals", "제안"},
	"prop.in":                {"Inbox: awaiting you", "받은 제안: 답변 필요"},
	"prop.out":               {"Outbox: awaiting them", "보낸 제안: 상대 답변 대기"},
	"prop.all":               {"All", "전체"},
	"prop.none":              {"No proposals here.", "제안이 없습니다."},
	"prop.from":              {"From", "보낸 회사"},
	"prop.to":                {"Awaiting", "답변할 회사"},
	"prop.toparty":           {"To", "받는 회사"},
	"prop.with":              {"Answered by", "답변한 회사"},
	"prop.closed.accepted":   {"%s accepted this proposal on %s.", "%s이(가) %s에 이 제안을 수락했습니다."},
	"prop.closed.rejected":   {"%s rejected this proposal on %s.", "%s이(가) %s에 이 제안을 거절했습니다."},
	"prop.parts":             {"Parts", "부품"},
	"prop.history":           {"History", "이력"},
	"prop.created":           {"Proposed", "제안"},
	"prop.yourturn":          {"Your answer", "답변하기"},
	"prop.waiting":           {"Waiting for %s to answer.", "%s의 답변을 기다리는 중입니다."},
	"prop.accept":            {"Accept", "수락"},
	"prop.reject":            {"Reject", "거절"},
	"prop.counter":           {"Counter-offer", "역제안"},
	"prop.by":                {"By", "작성"},
	"prop.action":            {"Action", "응답"},
	"prop.when":              {"When", "일시"},
	"prop.status":            {"Status", "상태"},
	"propose":                {"Make a proposal", "제안하기"},
	"propose.send":           {"Send proposal", "제안 보내기"},
	"notes.title":            {"Notifications", "알림"},
	"notes.none":             {"No notifications.", "알림이 없습니다."},
	"notes.unread":           {"unread", "읽지 않음"},
	"notes.open":             {"Open", "바로 가기"},
	"notes.latest":           {"Newest first, 20 a page; notifications expire after 30 days.", "최신순, 한 페이지에 20건 (알림은 30일 후 삭제됩니다)."},
	"m.created":              {"Part listed.", "부품을 등록했습니다."},
	"m.saved":                {"Part saved.", "부품을 저장했습니다."},
	"m.withdrawn":            {"Part withdrawn.", "부품 등록을 철회했습니다."},
	"m.cancelled":            {"Watch cancelled.", "관심 알림을 해제했습니다."},
	"m.proposed":             {"Proposal sent.", "제안을 보냈습니다."},
	"m.accept":               {"You accepted the proposal.", "제안을 수락했습니다."},
	"m.reject":               {"You rejected the proposal.", "제안을 거절했습니다."},
	"m.counter":              {"Counter-offer sent.", "역제안을 보냈습니다."},
	"w.battery":              {"battery", "배터리"},
	"w.motor":                {"motor", "모터"},
	"w.inverter":             {"inverter", "인버터"},
	"w.charger":              {"charger", "충전기"},
	"w.electronics":          {"electronics", "전장 부품"},
	"w.body-chassis-frame":   {"body: chassis and frame", "차체: 섀시·프레임"},
	"w.body-panel":           {"body: panels", "차체: 패널"},
	"w.body-door":            {"body: doors", "차체: 도어"},
	"w.body-window":          {"body: windows", "차체: 유리"},
	"w.interior":             {"interior", "내장재"},
	"w.other":                {"other", "기타"},
	"w.new":                  {"new", "신품"},
	"w.used":                 {"used", "중고"},
	"w.refurbished":          {"refurbished", "재생"},
	"w.pending":              {"pending", "대기"},
	"w.negotiating":          {"negotiating", "협상 중"},
	"w.accepted":             {"accepted", "수락됨"},
	"w.rejected":             {"rejected", "거절됨"},
	"w.accept":               {"accepted", "수락"},
	"w.reject":               {"rejected", "거절"},
	"w.counter":              {"countered", "역제안"},
	"w.buy":                  {"buy", "구매"},
	"w.sell":                 {"sell", "판매"},
	"w.high":                 {"high", "높음"},
	"w.medium":               {"medium", "보통"},
	"w.low":                  {"low", "낮음"},
	"w.active":               {"active", "활성"},
	"w.fulfilled":            {"fulfilled", "충족"},
	"w.cancelled":            {"cancelled", "해제"},
	"w.reuse":                {"reuse", "재사용"},
	"w.recycle":              {"recycle", "재활용"},
	"w.dispose":              {"dispose", "폐기"},
	"w.part_available":       {"A part you watch for is listed", "관심 부품이 등록되었습니다"},
	"w.proposal_received":    {"New proposal", "새 제안이 도착했습니다"},
	"w.proposal_negotiating": {"Counter-offer received", "역제안을 받았습니다"},
	"w.proposal_accepted":    {"Proposal accepted", "제안이 수락되었습니다"},
	"w.proposal_rejected":    {"Proposal rejected", "제안이 거절되었습니다"},
	"w.compliance_violation": {"Compliance problem", "규정 위반 알림"},
}

// Img is the console's URL of an uploaded part image (/eecar/images/{key}
// → /console/eecar/images/{key}), "" for another reference: the CSP lets
// pages show images of the console's origin only.
func (l Lang) Img(ref string) string {
	key, ok := strings.CutPrefix(ref, "/eecar/images/")
	if !ok || key == "" || strings.ContainsAny(key, "/?#\\") {
		return ""
	}
	return "/console/eecar/images/" + key
}
