// crawl.mjs — the Crawlee side of bench/crawlbench: a CheerioCrawler that
// crawls the DataShelf fixture (a World of Books look-alike) the way quarry's
// crawler does, and prints one JSON line {pages, products, images, seconds,
// ...} on stdout.
//
//	node bench/crawlee/crawl.mjs http://127.0.0.1:PORT/en-gb 8
//
// Work per page, with the selectors of extract.WorldOfBooks():
//   - home: enqueue every collection link of the mega menu;
//   - collection: title, product cards (in <noscript>, which htmlparser2
//     parses as elements) → product requests; related collections and
//     link[rel=next] pagination → collection requests;
//   - product: title, price, currency, summary, specification rows
//     (author, ISBN, …), image URLs; each image is downloaded once and kept
//     in an in-memory key-value store; the product goes to the (in-memory)
//     dataset.
//
// Storage is in memory (persistStorage false, purged on start), there is no
// per-host delay and maxConcurrency = minConcurrency = the concurrency
// argument, so the autoscaled pool runs at that concurrency from the start.
// Only loopback start URLs are accepted.
import { CheerioCrawler, Configuration, KeyValueStore, log, LogLevel } from '@crawlee/cheerio';

const [startURL, concArg] = process.argv.slice(2);
if (!startURL) {
    console.error('usage: node crawl.mjs START_URL [CONCURRENCY]');
    process.exit(2);
}
const start = new URL(startURL);
if (!['127.0.0.1', 'localhost', '[::1]'].includes(start.hostname)) {
    console.error(`crawl.mjs: refusing non-loopback start URL ${startURL}`);
    process.exit(2);
}
const concurrency = Math.max(1, parseInt(concArg ?? '8', 10) || 8);
log.setLevel(LogLevel.WARNING);

const NAV_LINKS = 'onstate-mega-menu.header__inline-menu > nav > ul.list-menu--inline > li.has-submenu div.onstate-mega-menu__submenu ul.list-menu > li > a[href*="/collections/"]';
const RELATED = 'div.plp-related-collections__list > a[href]';
const CARD = 'div.product, li.ais-InfiniteHits-item, .main-product-card';
const CARD_LINK = 'a[href*="/products/"]';
const NEXT = 'link[rel="next"]';
const PAGINATION_NEXT = 'div.pagination > a[aria-label="Next"]';
const TITLE = '.product__title h1';
const PRICE = '.price-item, .price';
const SUMMARY = '.product__description .rte';
const IMAGES = '.product__media img';
const SPEC_ROWS = 'table tr';
const SOURCE_ID = /\/products\/(?:[^/?#]*-)?(\d{13})(?:[/?#]|$)/;

const config = new Configuration({ persistStorage: false, purgeOnStart: true });
const images = await KeyValueStore.open('images', { config });
const seenImages = new Map(); // URL → Promise of the download (once per URL)
let products = 0;
let imageCount = 0;
let imageBytes = 0;
let failures = 0;

const normKey = (k) => k.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '');
const specKey = (k) => {
    const n = normKey(k);
    if (n === 'isbn13' || n === 'isbn_13' || n === 'isbn') return 'isbn';
    if (n === 'date_published' || n === 'publication_date') return 'publication_date';
    if (n === 'book_condition' || n === 'condition') return 'condition';
    return n;
};
const currencyOf = (s) => (s.includes('£') ? 'GBP' : s.includes('€') ? 'EUR' : s.includes('$') ? 'USD' : '');

// Absolute URL without fragment (and, for products, without query).
const abs = (href, base, dropQuery) => {
    try {
        const u = new URL(href, base);
        if (u.host !== start.host) return null;
        u.hash = '';
        if (dropQuery) u.search = '';
        return u.href;
    } catch {
        return null;
    }
};

function downloadImage(url, sendRequest) {
    let p = seenImages.get(url);
    if (!p) {
        p = (async () => {
            const res = await sendRequest({ url, responseType: 'buffer' });
            if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`image ${url}: status ${res.statusCode}`);
            const key = normKey(new URL(url).pathname).slice(-200) || 'image';
            await images.setValue(key, res.body, { contentType: res.headers['content-type'] ?? 'image/jpeg' });
            imageCount++;
            imageBytes += res.body.length;
            return key;
        })();
        seenImages.set(url, p);
        p.catch(() => seenImages.delete(url)); // a failed download may be retried
    }
    return p;
}

const crawler = new CheerioCrawler(
    {
        maxConcurrency: concurrency,
        minConcurrency: concurrency,
        maxRequestRetries: 3,
        maxRequestsPerCrawl: 100000, // bound: the 5,000-product fixture needs ~5,300 pages
        sameDomainDelaySecs: 0,
        requestHandlerTimeoutSecs: 60,
        async requestHandler({ request, $, enqueueLinks, addRequests, pushData, sendRequest }) {
            const base = request.loadedUrl ?? request.url;
            const label = request.label ?? 'NAV';
            if (label === 'NAV') {
                await enqueueLinks({ selector: NAV_LINKS, label: 'CATEGORY' });
                return;
            }
            if (label === 'CATEGORY') {
                const reqs = [];
                $(CARD).each((_, card) => {
                    const href = $(card).find(CARD_LINK).first().attr('href');
                    const u = href && abs(href, base, true);
                    if (u) reqs.push({ url: u, label: 'PRODUCT' });
                });
                $(RELATED).each((_, a) => {
                    const u = abs($(a).attr('href'), base, true);
                    if (u) reqs.push({ url: u, label: 'CATEGORY' });
                });
                const next = $(NEXT).first().attr('href') ?? $(PAGINATION_NEXT).first().attr('href');
                if (next) {
                    const u = abs(next, base, false);
                    if (u && u !== base) reqs.push({ url: u, label: 'CATEGORY' });
                }
                if (reqs.length) await addRequests(reqs);
                return;
            }
            // PRODUCT
            const title = $(TITLE).first().text().trim();
            if (!title) throw new Error(`no title on ${request.url}`);
            const priceText = $(PRICE).first().text().trim();
            const m = priceText.replace(/,/g, '').match(/\d+(?:\.\d+)?/);
            const specs = {};
            $(SPEC_ROWS).each((_, tr) => {
                const cells = $(tr).children('th, td');
                if (cells.length < 2) return;
                const k = specKey($(cells[0]).text().trim());
                let v = $(cells[1]).text().trim();
                if (k === 'isbn') v = v.replace(/[^0-9Xx]/g, '');
                if (k && v) specs[k] = v;
            });
            const imageURLs = [];
            $(IMAGES).each((_, img) => {
                const u = abs($(img).attr('src') ?? '', base, false);
                if (u && !imageURLs.includes(u)) imageURLs.push(u);
            });
            const keys = [];
            for (const u of imageURLs) keys.push(await downloadImage(u, sendRequest));
            const sid = SOURCE_ID.exec(new URL(request.url).pathname);
            await pushData({
                url: request.url,
                sourceId: sid ? sid[1] : null,
                title,
                price: m ? Number(m[0]) : null,
                currency: currencyOf(priceText),
                summary: $(SUMMARY).first().text().replace(/\s+/g, ' ').trim(),
                author: specs.author ?? null,
                isbn: specs.isbn ?? null,
                specs,
                images: keys,
            });
            products++;
        },
        failedRequestHandler({ request }, err) {
            failures++;
            console.error(`crawl.mjs: failed ${request.url}: ${err.message}`);
        },
    },
    config,
);

const t0 = process.hrtime.bigint();
const stats = await crawler.run([{ url: start.href, label: 'NAV' }]);
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const ds = await crawler.getDataset();
const info = await ds.getInfo();
console.log(JSON.stringify({
    pages: stats.requestsFinished + stats.requestsFailed,
    products,
    dataset_items: info?.itemCount ?? null,
    images: imageCount,
    image_bytes: imageBytes,
    failed_requests: stats.requestsFailed,
    retries: stats.retryHistogram?.slice(1).reduce((a, b) => a + (b ?? 0), 0) ?? 0,
    handler_failures: failures,
    seconds,
    concurrency,
}));
