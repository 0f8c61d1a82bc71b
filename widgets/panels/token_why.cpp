#include "widgets/panels/token_why.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QTextDocument>
#include <QVBoxLayout>

#include "core/model/vocab.h"
#include "widgets/data/palette.h"
#include "widgets/data/qt_text.h"

namespace mlk {

namespace {

// A token as the samples show it: the space as an open box.
QString tokenText(int32_t id) {
    if (id < 0) return QStringLiteral("\u2014");
    const QString t = QString::fromStdString(Vocab::token_text(id));
    return t == QLatin1String(" ") ? QStringLiteral("\u2423") : t;
}

QString plain(const QString& html) {
    QTextDocument d;
    d.setHtml(html);
    return d.toPlainText();
}

QLabel* richLabel(QWidget* parent) {
    auto* l = new QLabel(parent);
    l->setTextFormat(Qt::RichText);
    l->setWordWrap(true);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return l;
}

QTableWidget* makeTable(const QStringList& headers, QWidget* parent) {
    auto* t = new QTableWidget(0, static_cast<int>(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->setVisible(false);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionMode(QAbstractItemView::NoSelection);
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    return t;
}

// Shows every row and nothing more, so the path stays in view below; a
// table without rows (no token shown, a dense model's routes) not at all.
void fitRows(QTableWidget* t) {
    t->setVisible(t->rowCount() > 0);
    int h = t->horizontalHeader()->sizeHint().height() + 2 * t->frameWidth();
    for (int r = 0; r < t->rowCount(); ++r) h += t->rowHeight(r);
    t->setFixedHeight(h);
}

}  // namespace

TokenWhy::TokenWhy(QWidget* parent) : QWidget(parent) {
    auto* l = new QVBoxLayout(this);
    l->setContentsMargins(6, 6, 6, 6);
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Largest |\u0394 log p| at this step:"), this));
    chooser_ = new QComboBox(this);
    chooser_->setObjectName(QStringLiteral("worstTokenChooser"));
    chooser_->setToolTip(
        tr("The step's tokens of largest |lp_train \u2212 lp_roll|, largest first; "
           "also pick a dot in Probabilities or a token in Samples"));
    top->addWidget(chooser_, 1);
    l->addLayout(top);
    connect(chooser_, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (!filling_ && i >= 0) showWorst(i);
    });

    summary_ = richLabel(this);
    summary_->setObjectName(QStringLiteral("whySummary"));
    l->addWidget(summary_);
    note_ = richLabel(this);
    note_->setStyleSheet(QStringLiteral("color: %1;").arg(palette::secondaryText().name()));
    l->addWidget(note_);

    auto* tables = new QHBoxLayout;
    auto* left = new QVBoxLayout;
    altsTitle_ = richLabel(this);
    altsTitle_->setText(tr("<b>Most likely tokens</b> under each engine (the sampled one in bold)"));
    alts_ = makeTable({tr("#"), tr("rollout"), tr("log p"), tr("p"), tr("training"), tr("log p"), tr("p")}, this);
    alts_->setObjectName(QStringLiteral("whyAlternatives"));
    // The numbers whole ("-0.0538060" is cut in an equal share); the
    // tokens' columns take what is left.
    for (int c : {0, 2, 3, 5, 6}) alts_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    left->addWidget(altsTitle_);
    left->addWidget(alts_);
    left->addStretch(1);
    auto* right = new QVBoxLayout;
    routesTitle_ = richLabel(this);
    routes_ = makeTable({tr("layer"), tr("rollout experts"), tr("training experts"), tr("flipped")}, this);
    routes_->setObjectName(QStringLiteral("whyRoutes"));
    right->addWidget(routesTitle_);
    right->addWidget(routes_);
    right->addStretch(1);
    tables->addLayout(left, 1);
    tables->addLayout(right, 1);
    l->addLayout(tables);

    path_ = richLabel(this);
    path_->setObjectName(QStringLiteral("whyPath"));
    l->addWidget(path_);
    l->addStretch(1);
    setStep({});
}

void TokenWhy::setStep(WorstTokens worst, const QString& note) {
    worst_ = std::move(worst);
    filling_ = true;
    chooser_->clear();
    int rank = 1;
    for (const WorstToken& t : worst_.tokens)
        chooser_->addItem(tr("#%1  \u201C%2\u201D  seq %3, pos %4  |\u0394 log p| = %5%6")
                              .arg(rank++)
                              .arg(tokenText(t.token))
                              .arg(t.seq)
                              .arg(t.pos)
                              .arg(num(std::abs((double)t.lp_train - (double)t.lp_roll), 4))
                              .arg(t.flips > 0 ? tr("  \u00B7 %n flip(s)", nullptr, t.flips) : QString()));
    chooser_->setEnabled(!worst_.tokens.empty());
    filling_ = false;
    if (!worst_.tokens.empty()) {
        showWorst(0);
        return;
    }
    rank_ = -1;
    flippedShown_ = 0;
    shown_ = {};
    summary_->setText(QString());
    clearTables();
    path_->setText(QString());
    note_->setText(note.isEmpty() ? tr("No worst tokens stored for this step (runs recorded before "
                                       "\u201CWhy this token?\u201D existed keep none).")
                                  : note);
    emit shownChanged();
}

void TokenWhy::showWorst(int rank) {
    if (rank < 0 || rank >= static_cast<int>(worst_.tokens.size())) return;
    rank_ = rank;
    filling_ = true;
    chooser_->setCurrentIndex(rank);
    filling_ = false;
    showDetail(worst_.tokens[static_cast<size_t>(rank)]);
}

void TokenWhy::showToken(const TokenPick& pick) {
    for (size_t i = 0; i < worst_.tokens.size(); ++i)
        if (worst_.tokens[i].seq == pick.seq && worst_.tokens[i].pos == pick.pos) {
            showWorst(static_cast<int>(i));
            return;
        }
    showKnown(pick);
}

// Both probabilities, delta log p, the ratio and the flips, as one small table.
static QString numbersHtml(const QString& head, double lr, double lt, int flips, int moeLayers) {
    const double d = lt - lr;
    QString h = head;
    h += QStringLiteral(
             "<table cellspacing='0' cellpadding='3' style='margin-top:4px'>"
             "<tr><td></td><th align='right'>%1</th><th align='right'>%2</th></tr>")
             .arg(QObject::tr("rollout"), QObject::tr("training"));
    h += QStringLiteral("<tr><td>p</td><td align='right'>%1</td><td align='right'>%2</td></tr>")
             .arg(num(std::exp(lr)), num(std::exp(lt)));
    h += QStringLiteral("<tr><td>log p</td><td align='right'>%1</td><td align='right'>%2</td></tr></table>")
             .arg(num(lr, 8), num(lt, 8));
    const QColor heat = palette::mismatchHeat(std::abs(d));
    h += QStringLiteral(
             "<p style='margin-top:4px'>\u0394 log p = lp_train \u2212 lp_roll = "
             "<span style='background-color:%1; color:%2'>&nbsp;<b>%3</b>&nbsp;</span>"
             " \u00B7 ratio p_train / p_roll = <b>%4</b>")
             .arg(heat.name(), palette::inkOn(heat).name(), num(d, 5), num(std::exp(d), 4));
    if (flips >= 0 && moeLayers > 0)
        h += QStringLiteral(" \u00B7 <span style='color:%1'>%2</span>")
                 .arg(palette::routerFlip().name(),
                      QObject::tr("router flips: %1 over %2 MoE layer(s)").arg(flips).arg(moeLayers));
    else if (moeLayers > 0) h += QObject::tr(" \u00B7 router flips: not stored for this token");
    return h + QStringLiteral("</p>");
}

void TokenWhy::showDetail(const WorstToken& t) {
    shown_ = {t.seq, t.pos, t.token, t.lp_roll, t.lp_train, t.flips};
    const int rank = rank_ + 1, n = static_cast<int>(worst_.tokens.size());
    summary_->setText(numbersHtml(tr("<b>Token \u201C%1\u201D</b> (id %2) \u00B7 sequence %3, response position %4 "
                                     "\u00B7 rank %5 of the step's %6 largest |\u0394 log p|")
                                      .arg(tokenText(t.token).toHtmlEscaped())
                                      .arg(t.token)
                                      .arg(t.seq)
                                      .arg(t.pos)
                                      .arg(rank)
                                      .arg(n),
                                  t.lp_roll, t.lp_train, t.flips, static_cast<int>(worst_.moe_layers.size())));
    note_->setText(QString());

    // ---- alternatives, side by side ----
    const int rows = static_cast<int>(std::max(t.alt_roll.size(), t.alt_train.size()));
    alts_->setRowCount(rows);
    bool inRoll = false, inTrain = false;
    const auto put = [&](int r, int c, const QString& text, bool chosen) {
        auto* it = new QTableWidgetItem(text);
        it->setTextAlignment(c == 1 || c == 4 ? Qt::Alignment(Qt::AlignCenter) : (Qt::AlignRight | Qt::AlignVCenter));
        if (chosen) {
            QFont f = it->font();
            f.setBold(true);
            it->setFont(f);
            it->setBackground(palette::changedSetting());
        }
        alts_->setItem(r, c, it);
    };
    for (int r = 0; r < rows; ++r) {
        put(r, 0, QString::number(r + 1), false);
        const auto side = [&](const std::vector<TokenAlternative>& a, int c0, bool& found) {
            if (r >= static_cast<int>(a.size()) || a[r].token < 0) return;
            const bool chosen = a[r].token == t.token;
            found = found || chosen;
            put(r, c0, tokenText(a[r].token), chosen);
            put(r, c0 + 1, num(a[r].lp, 6), chosen);
            put(r, c0 + 2, num(std::exp(a[r].lp), 4), chosen);
        };
        side(t.alt_roll, 1, inRoll);
        side(t.alt_train, 4, inTrain);
    }
    QString altNote = tr("<b>Most likely tokens</b> under each engine (the sampled one in bold)");
    if (!inRoll || !inTrain)
        altNote += tr(" \u00B7 the sampled token is outside the %1 top %2")
                       .arg(!inRoll && !inTrain ? tr("rollout's and the training's")
                                                : (!inRoll ? tr("rollout's") : tr("training's")))
                       .arg(kTopAlternatives);
    altsTitle_->setText(altNote);
    altsTitle_->show();
    fitRows(alts_);

    // ---- routes, per MoE layer ----
    const int layers = static_cast<int>(t.experts_roll.size());
    routes_->setRowCount(layers);
    flippedShown_ = 0;
    int flippedLayers = 0;
    const QString flipInk = palette::routerFlip().name();
    for (int l = 0; l < layers; ++l) {
        const auto& a = t.experts_roll[static_cast<size_t>(l)];
        const auto& b = t.experts_train[static_cast<size_t>(l)];
        const std::set<int32_t> sa(a.begin(), a.end()), sb(b.begin(), b.end());
        const auto ids = [&](const std::vector<int32_t>& v, const std::set<int32_t>& other) {
            QStringList out;
            for (int32_t e : v) {
                const bool flipped = !other.count(e);
                if (flipped) ++flippedShown_;
                out << (flipped ? QStringLiteral("<b style='color:%1'>%2</b>").arg(flipInk).arg(e)
                                : QString::number(e));
            }
            return out.join(QStringLiteral(", "));
        };
        int missing = 0;  // rollout experts the training engine did not use: the router diff's d
        for (int32_t e : a) missing += sb.count(e) ? 0 : 1;
        if (missing) ++flippedLayers;
        const QColor fill = missing ? palette::routerFlipFill() : QColor(Qt::white);
        const int layer =
            l < static_cast<int>(worst_.moe_layers.size()) ? worst_.moe_layers[static_cast<size_t>(l)] : l;
        const QStringList cells = {
            QString::number(layer), ids(a, sb), ids(b, sa),
            missing ? QStringLiteral("<b style='color:%1'>%2</b>").arg(flipInk).arg(missing) : QStringLiteral("0")};
        for (int c = 0; c < 4; ++c) {
            auto* under = new QTableWidgetItem;  // the row's fill, under a transparent rich-text label
            under->setBackground(fill);
            routes_->setItem(l, c, under);
            auto* lab = new QLabel(cells[c]);
            lab->setTextFormat(Qt::RichText);
            lab->setAlignment(Qt::AlignCenter);
            lab->setAttribute(Qt::WA_TranslucentBackground);
            routes_->setCellWidget(l, c, lab);
        }
    }
    fitRows(routes_);
    routesTitle_->setText(layers ? tr("<b>Router</b>: experts that routed the position before this token \u00B7 "
                                      "<b style='color:%1'>flipped</b> in %2 of %3 MoE layer(s)")
                                       .arg(flipInk)
                                       .arg(flippedLayers)
                                       .arg(layers)
                                 : tr("<b>Router</b>: dense model, no experts"));

    // ---- path ----
    const RoundingPointNames &ro = worst_.rollout, &tp = worst_.train;
    QString h = tr("<b>Rounding points</b> (where each engine stores a value narrow; differing ones shaded)");
    h += QStringLiteral("<table cellspacing='0' cellpadding='2'><tr><td></td>");
    struct Point {
        QString name;
        std::string roll, train;
        bool both;  // a point of both engines (the KV cache is the rollout's only)
    };
    const Point points[] = {{tr("matmul"), ro.matmul, tp.matmul, true},
                            {tr("residual"), ro.residual, tp.residual, true},
                            {tr("norm"), ro.norm, tp.norm, true},
                            {tr("SiLU"), ro.silu, tp.silu, true},
                            {tr("RoPE cache"), ro.rope_cache, tp.rope_cache, true},
                            {tr("RoPE"), ro.rope, tp.rope, true},
                            {tr("softmax"), ro.softmax, tp.softmax, true},
                            {tr("attn P"), ro.attn_probs, tp.attn_probs, true},
                            {tr("stats"), ro.stats, tp.stats, true},
                            {tr("LM head"), ro.lm_head, tp.lm_head, true},
                            {tr("KV cache"), ro.kv_cache, "\u2014", false}};
    for (const Point& p : points) h += QStringLiteral("<th>&nbsp;%1&nbsp;</th>").arg(p.name);
    for (int side = 0; side < 2; ++side) {
        h += QStringLiteral("</tr><tr><td><b>%1</b></td>").arg(side ? tr("training") : tr("rollout"));
        for (const Point& p : points) {
            const std::string& v = side ? p.train : p.roll;
            const bool differs = p.both && p.roll != p.train;
            h += QStringLiteral("<td align='center' style='background-color:%1'>%2</td>")
                     .arg(differs ? palette::changedSetting().name() : QStringLiteral("transparent"),
                          QString::fromStdString(v.empty() ? std::string("?") : v));
        }
    }
    h += QStringLiteral("</tr></table>");
    const bool invariant = worst_.kernels == "batch-invariant";
    const QString rollFwd = t.prefill ? tr("the prompt's packed prefill, M = %1 rows").arg(t.rollout_rows)
                                      : tr("a decode step, M = %1 row(s)").arg(t.rollout_rows);
    h += tr("<p style='margin-top:4px'><b>Kernels</b>: %1 \u00B7 rollout computed this token in %2; training "
            "recomputed it in a prefill of M = %3 rows \u00B7 %4</p>")
             .arg(QString::fromStdString(worst_.kernels), rollFwd)
             .arg(worst_.train_rows)
             .arg(invariant ? tr("one reduction order for every M, so the shapes do not matter")
                            : tr("shape-dispatched: the two M pick different reduction orders "
                                 "(split-K / split-KV for small M, K-blocked for large M)"));
    const QString replay = QString::fromStdString(worst_.routing_replay);
    h += tr("<p><b>Routing replay</b>: %1</p>")
             .arg(replay == QLatin1String("R3")   ? tr("R3 \u2014 the training engine replays the rollout's experts")
                  : replay == QLatin1String("R2") ? tr("R2 \u2014 mini-steps replay the old-policy forward's experts; "
                                                       "the recompute routes on its own logits")
                                                  : tr("off \u2014 the training engine routes on its own logits"));
    path_->setText(h);
    emit shownChanged();
}

void TokenWhy::showKnown(const TokenPick& pick) {
    shown_ = pick;
    rank_ = -1;
    flippedShown_ = 0;
    filling_ = true;
    chooser_->setCurrentIndex(-1);
    filling_ = false;
    summary_->setText(numbersHtml(
        tr("<b>Token \u201C%1\u201D</b>%2 \u00B7 sequence %3, response position %4")
            .arg(tokenText(pick.token).toHtmlEscaped(), pick.token >= 0 ? tr(" (id %1)").arg(pick.token) : QString())
            .arg(pick.seq)
            .arg(pick.pos),
        pick.lp_roll, pick.lp_train, pick.flips, static_cast<int>(worst_.moe_layers.size())));
    note_->setText(tr("Alternatives, routes and path are kept for the step's %1 largest-|\u0394 log p| tokens "
                      "(the list above); this token is not one of them.")
                       .arg(worst_.tokens.empty() ? kWorstTokens : static_cast<int>(worst_.tokens.size())));
    clearTables();
    path_->setText(QString());
    emit shownChanged();
}

QString TokenWhy::summaryText() const { return plain(summary_->text() + QStringLiteral("<br>") + note_->text()); }
QString TokenWhy::pathText() const { return plain(path_->text()); }
void TokenWhy::clearTables() {
    alts_->setRowCount(0);
    routes_->setRowCount(0);
    fitRows(alts_);
    fitRows(routes_);
    altsTitle_->hide();
    routesTitle_->setText(QString());
}

QString TokenWhy::noteText() const { return plain(note_->text()); }

}  // namespace mlk
